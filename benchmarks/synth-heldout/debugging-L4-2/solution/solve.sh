#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
python3 report.py 'touché paddle.csv'
)
cd "$WD"
(
grep -n ',unknown$' 'touché paddle.csv'
)
cd "$WD"
(
sed -i '/,unknown$/d' 'touché paddle.csv'
)
cd "$WD"
(
python3 report.py 'touché paddle.csv' > grand-blanket.txt
)
cd "$WD"
