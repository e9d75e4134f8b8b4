#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat kiwi/*.txt | sort -u > shore25.txt
)
cd "$WD"
