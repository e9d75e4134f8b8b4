#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tail -n +2 candid_archive.csv | wc -l > zephyr46.txt
)
cd "$WD"
