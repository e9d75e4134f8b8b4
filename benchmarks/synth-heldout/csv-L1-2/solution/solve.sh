#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cut -d, -f3 forest73.csv > floral-quill.txt
)
cd "$WD"
