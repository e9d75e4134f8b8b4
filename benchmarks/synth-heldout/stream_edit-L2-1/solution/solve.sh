#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/^limit=.*/limit=99005/' atlas20.ini
)
cd "$WD"
