#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/granite/horizon/g' garnet_dragon.txt
)
cd "$WD"
