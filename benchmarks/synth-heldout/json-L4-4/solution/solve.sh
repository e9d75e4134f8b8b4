#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.owner = "theo_84"' 'smörgås_crystal.json' > tmp.json
)
cd "$WD"
(
mv tmp.json 'smörgås_crystal.json'
)
cd "$WD"
