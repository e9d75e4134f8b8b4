#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir persimmon
)
cd "$WD"
(
find reports -name '*.csv' -exec cp {} persimmon/ \;
)
cd "$WD"
