#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -czf swift-caravan.tar.gz *.csv
)
cd "$WD"
