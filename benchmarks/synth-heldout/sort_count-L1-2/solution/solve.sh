#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sort cities.txt > fancy_island.txt
)
cd "$WD"
