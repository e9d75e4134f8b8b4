#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir -p nairobi/canyon
)
cd "$WD"
(
cp 'niño flute.csv' nairobi/canyon/
)
cd "$WD"
