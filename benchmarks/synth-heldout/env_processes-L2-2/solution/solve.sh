#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
env | grep '^APP_' | sort > mighty-mantle.txt
)
cd "$WD"
