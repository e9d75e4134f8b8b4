#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls upload
)
cd "$WD"
(
for f in upload/*.htm; do mv "$f" "${f%.htm}.html"; done
)
cd "$WD"
