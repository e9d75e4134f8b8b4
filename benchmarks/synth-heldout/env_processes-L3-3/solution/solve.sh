#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./thunder_lagoon.sh
)
cd "$WD"
(
source ./'façade shore.env' && ./thunder_lagoon.sh > keen_reef.txt
)
cd "$WD"
