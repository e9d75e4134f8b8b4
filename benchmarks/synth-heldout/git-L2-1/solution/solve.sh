#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
git checkout -b feature/ribbon-41
)
cd "$WD"
