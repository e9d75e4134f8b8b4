#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -tf bundle_velvet.tar
)
cd "$WD"
(
tar -rf bundle_velvet.tar canvas75.txt
)
cd "$WD"
