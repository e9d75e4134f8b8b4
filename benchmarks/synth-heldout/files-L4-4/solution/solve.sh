#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l barcelona
)
cd "$WD"
(
mv barcelona barcelona.old
)
cd "$WD"
(
mkdir barcelona
)
cd "$WD"
(
cp icy-spruce.conf vivid-violin.conf barcelona/
)
cd "$WD"
