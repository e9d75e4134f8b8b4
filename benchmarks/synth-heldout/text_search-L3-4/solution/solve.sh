#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls 'tête plaza'
)
cd "$WD"
(
cat 'tête plaza'/*.log | grep -c ERR900 > treasure_pebble.txt
)
cd "$WD"
