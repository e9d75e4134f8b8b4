#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git add plain-cobalt.md
)
cd "$WD"
(
git commit -m 'Update daring bench'
)
cd "$WD"
