#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'niño budget' -type f -mtime +7 | sort
)
cd "$WD"
(
find 'niño budget' -type f -mtime +7 -delete
)
cd "$WD"
