#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r 'keys[]' 'amber ribbon.json' > lagoon_teapot.txt
)
cd "$WD"
