#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'engine (5)' -type f -empty
)
cd "$WD"
(
find 'engine (5)' -type f -empty -delete
)
cd "$WD"
