#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir -p tools
)
cd "$WD"
(
cp 'curious lemon.sh' tools/
)
cd "$WD"
(
chmod +x 'tools/curious lemon.sh'
)
cd "$WD"
