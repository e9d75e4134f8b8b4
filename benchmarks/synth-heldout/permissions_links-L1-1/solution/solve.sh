#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod +x stellar_kernel.sh
)
cd "$WD"
