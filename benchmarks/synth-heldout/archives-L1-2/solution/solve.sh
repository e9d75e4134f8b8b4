#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
gzip ember83.txt
)
cd "$WD"
