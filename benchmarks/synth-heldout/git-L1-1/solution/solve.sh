#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git init coconut
)
cd "$WD"
