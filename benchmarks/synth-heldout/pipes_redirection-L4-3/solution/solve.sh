#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls pebble
)
cd "$WD"
(
echo "total: $(ls pebble/*.txt | wc -l)" > report.txt
)
cd "$WD"
