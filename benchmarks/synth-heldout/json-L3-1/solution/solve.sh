#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.[0]' 'snowy granite garçon.json'
)
cd "$WD"
(
jq -r '.[] | select(.price > 70) | .name' 'snowy granite garçon.json' > floral-delta.txt
)
cd "$WD"
