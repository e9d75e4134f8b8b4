#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
timeout 1 ./'fierce circuit piñata.sh' > beacon_scroll.txt
)
cd "$WD"
