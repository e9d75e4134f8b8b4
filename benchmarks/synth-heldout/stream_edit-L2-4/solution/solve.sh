#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
sed -i 's/^limit=.*/limit=72608/' spindle7.ini
)
cd "$WD"
