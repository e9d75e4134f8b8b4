#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir -p scripts
)
cd "$WD"
(
cp 'thistle (6).sh' scripts/
)
cd "$WD"
(
chmod +x 'scripts/thistle (6).sh'
)
cd "$WD"
