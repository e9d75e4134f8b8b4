#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir tunis
)
cd "$WD"
(
tar -xJf rapid-river.tar.xz -C tunis
)
cd "$WD"
