#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/wcc/wc/' ledger81.sh
)
cd "$WD"
