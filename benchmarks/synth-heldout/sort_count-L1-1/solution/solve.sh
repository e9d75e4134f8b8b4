#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
wc -w < curious-diary.txt > slate_cable.txt
)
cd "$WD"
