#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git status --short
)
cd "$WD"
(
git reset --hard
)
cd "$WD"
