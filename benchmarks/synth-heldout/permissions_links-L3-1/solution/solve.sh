#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l grape
)
cd "$WD"
(
chmod +x grape/*.sh
)
cd "$WD"
