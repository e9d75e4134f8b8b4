#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git log -S compass_508 --format=%s > emerald-dagger.txt
)
cd "$WD"
