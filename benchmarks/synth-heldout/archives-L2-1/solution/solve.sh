#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
mkdir 'garçon rainbow'
)
cd "$WD"
(
tar -xzf misty_bridge.tar.gz -C 'garçon rainbow'
)
cd "$WD"
