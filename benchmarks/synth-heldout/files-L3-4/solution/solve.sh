#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir 'wild ferry soirée'
)
cd "$WD"
(
mv *.md 'wild ferry soirée'/
)
cd "$WD"
