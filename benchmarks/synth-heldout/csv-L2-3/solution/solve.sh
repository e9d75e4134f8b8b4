#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 1 'cedar (5).csv'
)
cd "$WD"
(
awk -F, '$3 == "frida"' 'cedar (5).csv' > chapter_treasure.txt
)
cd "$WD"
