#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -tf swamp_carpet.tar
)
cd "$WD"
(
tar -rf swamp_carpet.tar 'sonic summit fiancé.txt'
)
cd "$WD"
