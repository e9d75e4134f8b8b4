#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls dakar
)
cd "$WD"
(
echo "documents: $(ls dakar/*.md | wc -l)" > report.txt
)
cd "$WD"
