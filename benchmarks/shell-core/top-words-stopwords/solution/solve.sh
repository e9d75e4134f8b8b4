#!/bin/bash
cd /workspace
export LC_ALL=C
tr -cs 'A-Za-z' '\n' < talk.txt | tr 'A-Z' 'a-z' | grep -v '^$' \
  | grep -vxFf stopwords.txt | sort | uniq -c \
  | sort -k1,1nr -k2,2 | head -n 5 | awk '{ print $2, $1 }' > top5.txt
