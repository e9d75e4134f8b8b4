#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/seoul/santiago/g' sydney/*.conf
)
cd "$WD"
