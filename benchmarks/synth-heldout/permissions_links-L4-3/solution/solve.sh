#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
chmod +x 'bakery (2).sh'
)
cd "$WD"
(
./'bakery (2).sh' > island_fountain.txt
)
cd "$WD"
