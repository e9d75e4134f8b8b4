#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
wc -l < gilded_voyage.md > wild-arrow.txt
)
cd "$WD"
