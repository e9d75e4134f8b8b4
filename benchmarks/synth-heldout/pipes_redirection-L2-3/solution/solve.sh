#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./raft5.sh > rocket_valley.log 2>&1
)
cd "$WD"
