#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod +x snowy-easel.sh
)
cd "$WD"
(
./snowy-easel.sh > frosty-copper.txt
)
cd "$WD"
