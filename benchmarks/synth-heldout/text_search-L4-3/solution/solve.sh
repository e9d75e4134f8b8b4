#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 access_50.log
)
cd "$WD"
(
grep '" 404 ' access_50.log | cut -d' ' -f1 | sort -u > autumn-slate.txt
)
cd "$WD"
