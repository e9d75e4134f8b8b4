#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/haed/head/' stellar-locket.sh
)
cd "$WD"
