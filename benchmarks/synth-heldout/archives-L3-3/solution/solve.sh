#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir inventory
)
cd "$WD"
(
tar -xjf stone_glacier.tar.bz2 -C inventory
)
cd "$WD"
