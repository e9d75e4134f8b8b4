#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 otter_chapter.csv
)
cd "$WD"
(
tail -n +2 otter_chapter.csv | cut -d, -f2 | sort -u > temple18.csv
)
cd "$WD"
