#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq -r .storage.user cedar65.json > grand_marsh.txt
)
cd "$WD"
