#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
env | grep '^SHOP_' | sort > fiddle_lagoon.txt
)
cd "$WD"
