#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod 700 sydney
)
cd "$WD"
