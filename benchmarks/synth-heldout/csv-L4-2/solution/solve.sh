#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat -A sleepy_locket.csv | head -n 3
)
cd "$WD"
(
tr -d '\r' < sleepy_locket.csv > sleepy_locket_unix.csv
)
cd "$WD"
(
tail -n +2 sleepy_locket_unix.csv | cut -d, -f3 | sort -n | tail -n 1 > foggy-gravel.txt
)
cd "$WD"
