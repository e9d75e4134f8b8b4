#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -n '5p' citadel_plaza.txt > atlas_shore.txt
)
cd "$WD"
