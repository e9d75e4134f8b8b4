#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat -A 'málaga_ravine.cfg' | head -n 3
)
cd "$WD"
(
sed -i 's/\r$//' 'málaga_ravine.cfg'
)
cd "$WD"
(
sed -i 's/^limit=.*/limit=sail/' 'málaga_ravine.cfg'
)
cd "$WD"
