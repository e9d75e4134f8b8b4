#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
python3 report.py parcel96.csv
)
cd "$WD"
(
grep -n ',unknown$' parcel96.csv
)
cd "$WD"
(
sed -i '/,unknown$/d' parcel96.csv
)
cd "$WD"
(
python3 report.py parcel96.csv > lily_shelter.txt
)
cd "$WD"
