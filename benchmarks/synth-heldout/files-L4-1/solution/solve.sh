#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir -p bin
)
cd "$WD"
(
cp breeze_drawer.sh bin/
)
cd "$WD"
(
chmod +x bin/breeze_drawer.sh
)
cd "$WD"
