#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r .cache.host apron72.json > lily29.txt
)
cd "$WD"
