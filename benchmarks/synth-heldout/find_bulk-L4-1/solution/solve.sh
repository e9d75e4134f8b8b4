#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls 'jalapeño fiddle'
)
cd "$WD"
(
for f in 'jalapeño fiddle'/*.jpeg; do mv "$f" "${f%.jpeg}.jpg"; done
)
cd "$WD"
