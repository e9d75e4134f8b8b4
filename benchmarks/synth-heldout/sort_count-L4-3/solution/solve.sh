#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 5 'pale gazette.txt'
)
cd "$WD"
(
grep -v '^#' 'pale gazette.txt' | cut -d' ' -f1 | sort | uniq -c | awk '{print $2, $1}' > portal41.txt
)
cd "$WD"
