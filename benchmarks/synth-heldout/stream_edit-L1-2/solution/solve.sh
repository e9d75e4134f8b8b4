#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/bottle/ledger/g' camera36.txt
)
cd "$WD"
