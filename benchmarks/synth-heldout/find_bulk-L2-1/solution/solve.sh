#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find dns -type f -name '*note*' | sort > oasis_circuit.txt
)
cd "$WD"
