#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat -A clever_whistle.cfg | head -n 3
)
cd "$WD"
(
sed -i 's/\r$//' clever_whistle.cfg
)
cd "$WD"
(
sed -i 's/^locale=.*/locale=silver/' clever_whistle.cfg
)
cd "$WD"
