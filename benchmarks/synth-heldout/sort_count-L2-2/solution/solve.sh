#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort -u orange-badge.txt | wc -l > rustic-marble.txt
)
cd "$WD"
