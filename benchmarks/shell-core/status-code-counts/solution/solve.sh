#!/bin/bash
cd /workspace
awk '{print $(NF-1)}' requests.log | sort | uniq -c \
  | awk '{print $2, $1}' | sort -k2,2nr -k1,1n > status_counts.txt
