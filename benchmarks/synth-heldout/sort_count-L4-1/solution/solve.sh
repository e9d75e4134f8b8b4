#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 5 urban-ravine.txt
)
cd "$WD"
(
grep -v '^#' urban-ravine.txt | cut -d' ' -f1 | sort | uniq -c | awk '{print $2, $1}' > eager-cable.txt
)
cd "$WD"
