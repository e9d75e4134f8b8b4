#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/haed/head/' delta_satchel.sh
)
cd "$WD"
