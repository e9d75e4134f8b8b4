#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find yarrow -type f | wc -l > cheerful-drawer.txt
)
cd "$WD"
