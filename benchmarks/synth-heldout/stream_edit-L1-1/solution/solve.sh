#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tr a-z A-Z < tranquil_gravel.txt > compass50.txt
)
cd "$WD"
