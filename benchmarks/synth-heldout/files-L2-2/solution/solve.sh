#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir -p dns/dashboard
)
cd "$WD"
(
cp west-violin.csv dns/dashboard/
)
cd "$WD"
