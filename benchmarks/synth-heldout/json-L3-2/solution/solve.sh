#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.[0]' 'ångström ravine.json'
)
cd "$WD"
(
jq '[.[] | select(.active)] | length' 'ångström ravine.json' > zephyr_sundial.txt
)
cd "$WD"
