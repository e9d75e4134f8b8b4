#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 2 fluffy-tower.txt
)
cd "$WD"
(
cut -d',' -f1 fluffy-tower.txt > quarry27.txt
)
cd "$WD"
