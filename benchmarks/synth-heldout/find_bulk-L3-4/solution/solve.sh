#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
find strawberry -type f -mtime +14 | sort > elegant_canvas.txt
)
cd "$WD"
