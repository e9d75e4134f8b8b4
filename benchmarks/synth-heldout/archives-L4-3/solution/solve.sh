#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -xzf logs_91.tar.gz
)
cd "$WD"
(
ls orders
)
cd "$WD"
(
cat orders/*.log | grep -c ERROR > sandy_lagoon.txt
)
cd "$WD"
