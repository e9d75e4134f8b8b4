#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat 'elegant trail façade'/*.txt | sort -u > canyon_boulder.txt
)
cd "$WD"
