#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./echo88.sh > candid-vault.log 2>&1
)
cd "$WD"
