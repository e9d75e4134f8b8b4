#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find quarry -type f -mtime +30 | sort
)
cd "$WD"
(
find quarry -type f -mtime +30 -delete
)
cd "$WD"
