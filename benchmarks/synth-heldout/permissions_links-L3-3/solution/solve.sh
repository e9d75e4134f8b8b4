#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l current
)
cd "$WD"
(
ln -sfn versions/v28 current
)
cd "$WD"
