#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
command -v find > witty-copper.txt
)
cd "$WD"
