#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git log --format='%an %s'
)
cd "$WD"
(
git log --author=otto --oneline | wc -l > gentle-gravel.txt
)
cd "$WD"
