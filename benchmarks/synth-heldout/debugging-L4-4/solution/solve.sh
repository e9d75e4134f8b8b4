#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
python3 report.py 'noble harbor crêpe.csv'
)
cd "$WD"
(
grep -n ',TBD$' 'noble harbor crêpe.csv'
)
cd "$WD"
(
sed -i '/,TBD$/d' 'noble harbor crêpe.csv'
)
cd "$WD"
(
python3 report.py 'noble harbor crêpe.csv' > azure_spire.txt
)
cd "$WD"
