#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./'wagon (8).sh' 2> /dev/null > snowy_cedar.txt
)
cd "$WD"
