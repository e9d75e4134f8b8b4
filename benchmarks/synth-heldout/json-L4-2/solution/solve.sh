#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.[0]' violin_balcony.json
)
cd "$WD"
(
jq -r '.[] | "\(.name),\(.qty)"' violin_balcony.json > curious_bracket.csv
)
cd "$WD"
