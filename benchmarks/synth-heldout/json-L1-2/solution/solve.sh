#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r .name desert_glacier.json > name_value.txt
)
cd "$WD"
