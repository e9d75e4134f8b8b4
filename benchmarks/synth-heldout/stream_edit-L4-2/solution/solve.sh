#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
head -n 3 'royal balcony naïve.csv'
)
cd "$WD"
(
cut -d, -f2 'royal balcony naïve.csv' | tr A-Z a-z | sort -u > crimson-thicket.txt
)
cd "$WD"
