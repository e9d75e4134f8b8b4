#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat foggy_quill.sh
)
cd "$WD"
(
sed -i 's/\$ctiy/$city/' foggy_quill.sh
)
cd "$WD"
