#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat portal_lemon.txt shiny-corner.txt > humble-satchel.txt
)
cd "$WD"
