#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -czf scarlet_pebble.tar.gz *.csv
)
cd "$WD"
