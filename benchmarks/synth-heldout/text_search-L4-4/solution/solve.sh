#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 http_20.log
)
cd "$WD"
(
grep '" 500 ' http_20.log | cut -d' ' -f1 | sort -u > scroll_magnet.txt
)
cd "$WD"
