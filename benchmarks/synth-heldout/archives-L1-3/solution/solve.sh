#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -xzf candle.tar.gz
)
cd "$WD"
