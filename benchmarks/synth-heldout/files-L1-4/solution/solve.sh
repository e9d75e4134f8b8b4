#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cp candid-ridge.md emerald-walnut.md
)
cd "$WD"
