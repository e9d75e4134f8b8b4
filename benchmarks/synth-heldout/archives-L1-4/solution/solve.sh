#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -xzf queue.tar.gz
)
cd "$WD"
