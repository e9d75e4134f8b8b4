#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls denver
)
cd "$WD"
(
echo "documents: $(ls denver/*.csv | wc -l)" > report.txt
)
cd "$WD"
