#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls
)
cd "$WD"
(
rm -- *.md
)
cd "$WD"
