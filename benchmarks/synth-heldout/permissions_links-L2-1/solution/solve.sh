#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l ravine55.key
)
cd "$WD"
(
chmod 755 ravine55.key
)
cd "$WD"
