#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls 'crêpe coast'
)
cd "$WD"
(
echo "total: $(ls 'crêpe coast'/*.md | wc -l)" > report.txt
)
cd "$WD"
