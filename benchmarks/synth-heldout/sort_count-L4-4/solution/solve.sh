#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 5 'jalapeño token.txt'
)
cd "$WD"
(
grep -v '^#' 'jalapeño token.txt' | cut -d' ' -f1 | sort | uniq -c | awk '{print $2, $1}' > summit10.txt
)
cd "$WD"
