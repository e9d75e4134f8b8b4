#!/bin/bash
cd /workspace
awk 'NR > 1 && $1 !~ /^#/ && NF == 2 { t[$1] += $2 } END { for (r in t) print r, t[r] }' sales.txt \
  | LC_ALL=C sort -k2,2nr -k1,1 > totals.txt
