#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
SALUTE=bonjour ./'lantern (3).sh' > fancy_ember.txt
)
cd "$WD"
