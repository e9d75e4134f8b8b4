#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 2 'éclair monsoon.txt'
)
cd "$WD"
(
cut -d';' -f3 'éclair monsoon.txt' > lone_arrow.txt
)
cd "$WD"
