#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir orders
)
cd "$WD"
(
mv *.md orders/
)
cd "$WD"
