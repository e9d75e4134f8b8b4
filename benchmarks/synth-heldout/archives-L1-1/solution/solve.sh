#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -czf windy_orchard.tar.gz tunis
)
cd "$WD"
