#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo 'nora: silent clover bright' >> mellow_breeze.txt
)
cd "$WD"
