#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort -r needle_bundle.txt > indigo-capsule.txt
)
cd "$WD"
