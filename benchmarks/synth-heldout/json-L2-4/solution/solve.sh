#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r 'keys[]' 'lunar orchard résumé.json' > hidden-lagoon.txt
)
cd "$WD"
