#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort -u 'façade ivory.txt' > gazette50.txt
)
cd "$WD"
