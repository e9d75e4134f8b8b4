#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
./'wild cushion.sh'
)
cd "$WD"
(
ls helpers
)
cd "$WD"
(
PATH="$PWD/helpers:$PATH" ./'wild cushion.sh' > gentle-quill.txt
)
cd "$WD"
