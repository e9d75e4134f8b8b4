#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -tzf indigo-cottage.tar.gz
)
cd "$WD"
(
tar -xzf indigo-cottage.tar.gz orders/silver_easel.ini
)
cd "$WD"
