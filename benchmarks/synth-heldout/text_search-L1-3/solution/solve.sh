#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
grep -c notifier scroll_ember.log > notifier_count.txt
)
cd "$WD"
