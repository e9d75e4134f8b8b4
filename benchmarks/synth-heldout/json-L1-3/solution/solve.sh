#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r .name island70.json > reef84.txt
)
cd "$WD"
