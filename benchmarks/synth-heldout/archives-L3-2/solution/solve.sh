#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -tzf summit_jungle.tar.gz
)
cd "$WD"
(
tar -xzf summit_jungle.tar.gz lime/satchel_carpet.ini
)
cd "$WD"
