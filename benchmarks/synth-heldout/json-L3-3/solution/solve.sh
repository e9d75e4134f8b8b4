#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.[0]' 'brisk paddle naïve.json'
)
cd "$WD"
(
jq -r '.[] | select(.price > 45) | .name' 'brisk paddle naïve.json' > orchard_summit.txt
)
cd "$WD"
