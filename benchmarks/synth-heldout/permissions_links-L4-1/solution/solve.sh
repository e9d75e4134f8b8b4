#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l service.conf
)
cd "$WD"
(
ln -sf conf/plain_treasure.conf service.conf
)
cd "$WD"
