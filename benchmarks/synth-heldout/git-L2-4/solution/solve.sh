#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git add palace73.md
)
cd "$WD"
(
git commit -m 'Update green paddle'
)
cd "$WD"
