#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l 'otter (3).sh'
)
cd "$WD"
(
chmod 444 'otter (3).sh'
)
cd "$WD"
