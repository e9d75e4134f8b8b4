#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git log --format='%an %s'
)
cd "$WD"
(
git log --author=sena --oneline | wc -l > wagon_ferry.txt
)
cd "$WD"
