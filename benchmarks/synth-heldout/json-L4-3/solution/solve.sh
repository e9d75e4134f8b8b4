#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.[0]' cellar_echo.json
)
cd "$WD"
(
jq -r '.[] | "\(.name),\(.qty)"' cellar_echo.json > secret-stadium.csv
)
cd "$WD"
