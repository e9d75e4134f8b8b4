#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./'calm fossil köln.sh'
)
cd "$WD"
(
mkdir build
)
cd "$WD"
(
./'calm fossil köln.sh'
)
cd "$WD"
