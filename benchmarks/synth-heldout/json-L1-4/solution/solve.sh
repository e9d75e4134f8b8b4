#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r .region orange_flag.json > nimble_lemon.txt
)
cd "$WD"
