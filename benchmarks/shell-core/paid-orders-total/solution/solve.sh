#!/bin/bash
awk -F, 'NR > 1 && $3 == "paid" { s += $4 } END { printf "%.2f\n", s }' /workspace/orders.csv > /workspace/paid_total.txt
