#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l 'young canyon fjörd'
)
cd "$WD"
(
chmod +x 'young canyon fjörd'/*.sh
)
cd "$WD"
