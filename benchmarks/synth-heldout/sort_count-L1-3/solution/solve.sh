#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
wc -l < glacier_meadow.md > bold_field.txt
)
cd "$WD"
