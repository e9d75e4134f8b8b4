#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find 'são dock' -type f -empty
)
cd "$WD"
(
find 'são dock' -type f -empty -delete
)
cd "$WD"
