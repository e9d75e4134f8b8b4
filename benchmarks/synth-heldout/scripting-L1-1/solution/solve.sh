#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo "echo 'hello mila'" > chilly_cactus.sh
)
cd "$WD"
