#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
tar -tzf diary_plaza.tar.gz > forest59.txt
)
cd "$WD"
