#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cut -d, -f5 tiny_trail.csv > fiddle69.txt
)
cd "$WD"
