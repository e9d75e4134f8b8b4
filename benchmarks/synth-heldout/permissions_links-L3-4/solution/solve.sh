#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l live
)
cd "$WD"
(
ln -sfn builds/v13 live
)
cd "$WD"
