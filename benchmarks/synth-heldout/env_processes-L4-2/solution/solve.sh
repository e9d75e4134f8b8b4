#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
env -i ./'piñata otter.sh' > river_dock.txt
)
cd "$WD"
