#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 nginx_access_35.log
)
cd "$WD"
(
grep '" 404 ' nginx_access_35.log | cut -d' ' -f1 | sort -u > frosty_sketch.txt
)
cd "$WD"
