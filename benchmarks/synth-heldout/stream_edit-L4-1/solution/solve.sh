#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat -A floral_horizon.cfg | head -n 3
)
cd "$WD"
(
sed -i 's/\r$//' floral_horizon.cfg
)
cd "$WD"
(
sed -i 's/^cache=.*/cache=fossil/' floral_horizon.cfg
)
cd "$WD"
