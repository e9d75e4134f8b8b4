#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir harvest
)
cd "$WD"
(
mv meadow_mantle.csv harvest/
)
cd "$WD"
