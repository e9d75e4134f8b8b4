#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./scarlet-dragon.sh
)
cd "$WD"
(
source ./'pocket (4).env' && ./scarlet-dragon.sh > canyon_tower.txt
)
cd "$WD"
