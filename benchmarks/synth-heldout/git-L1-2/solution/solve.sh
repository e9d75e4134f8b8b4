#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git log -1 --format=%s > rainbow_bucket.txt
)
cd "$WD"
