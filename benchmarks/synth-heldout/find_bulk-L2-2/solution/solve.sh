#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find peach -type f -empty
)
cd "$WD"
(
find peach -type f -empty -delete
)
cd "$WD"
