#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
python3 totals.py 'tête_feather.csv'
)
cd "$WD"
(
grep -n ',-$' 'tête_feather.csv'
)
cd "$WD"
(
sed -i '/,-$/d' 'tête_feather.csv'
)
cd "$WD"
(
python3 totals.py 'tête_feather.csv' > zesty_silver.txt
)
cd "$WD"
