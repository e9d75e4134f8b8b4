#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r .owner app.json > slate_velvet.txt
)
cd "$WD"
