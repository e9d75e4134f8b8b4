#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 5 velvet_willow.txt
)
cd "$WD"
(
grep -v '^#' velvet_willow.txt | cut -d' ' -f1 | sort | uniq -c | awk '{print $2, $1}' > serene-horizon.txt
)
cd "$WD"
