#!/bin/bash
cd /workspace
awk '
  /^Traceback \(most recent call last\):$/ { intb = 1; next }
  intb && /^[ \t]/ { next }
  intb { sub(/:.*/, ""); print; intb = 0 }
' worker.log | LC_ALL=C sort | uniq -c | awk '{ print $1, $2 }' | LC_ALL=C sort -k1,1nr -k2,2 > exceptions.txt
