#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir drawer
)
cd "$WD"
(
tar -tvf floral_portal.tar.gz
)
cd "$WD"
(
tar -xf floral_portal.tar.gz -C drawer
)
cd "$WD"
