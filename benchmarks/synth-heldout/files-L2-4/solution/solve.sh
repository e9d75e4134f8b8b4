#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir -p apple/cactus
)
cd "$WD"
(
cp 'éclair_pillar.txt' apple/cactus/
)
cd "$WD"
