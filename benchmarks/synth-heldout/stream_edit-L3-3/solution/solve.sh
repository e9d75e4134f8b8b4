#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/dakar/wellington/g' proxy/*.conf
)
cd "$WD"
