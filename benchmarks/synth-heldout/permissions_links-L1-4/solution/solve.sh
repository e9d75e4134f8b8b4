#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod +x nectar_cottage.sh
)
cd "$WD"
