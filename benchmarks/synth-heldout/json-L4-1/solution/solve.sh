#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.name = "astrid_49"' 'horizon (7).json' > tmp.json
)
cd "$WD"
(
mv tmp.json 'horizon (7).json'
)
cd "$WD"
