#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'niño budget' -type f -mtime +30 | sort > foggy-ledger.txt
)
cd "$WD"
