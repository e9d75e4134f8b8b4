#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
command -v gzip > stone_bakery.txt
)
cd "$WD"
