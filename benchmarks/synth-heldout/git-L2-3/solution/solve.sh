#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git checkout -b feature/locket-13
)
cd "$WD"
