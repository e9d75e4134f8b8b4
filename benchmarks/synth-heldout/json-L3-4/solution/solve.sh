#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
jq '.[0]' 'modest nectar crème.json'
)
cd "$WD"
(
jq '[.[] | select(.active)] | length' 'modest nectar crème.json' > trail38.txt
)
cd "$WD"
