#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -ci ember silky-library.txt > silky-notebook.txt
)
cd "$WD"
