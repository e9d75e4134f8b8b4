#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
echo '*.cache' > .gitignore
)
cd "$WD"
(
git add .gitignore
)
cd "$WD"
(
git commit -m 'Fix silent capsule'
)
cd "$WD"
