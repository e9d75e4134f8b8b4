#!/bin/bash
cd /workspace
# grep -c exits 1 when it counts zero, and ((total += n)) "fails" when the result is 0.
sed -i -e 's/n=$(grep -c ERROR "$f")/n=$(grep -c ERROR "$f" || true)/' \
       -e 's/((total += n))/total=$((total + n))/' count_errors.sh
bash count_errors.sh
