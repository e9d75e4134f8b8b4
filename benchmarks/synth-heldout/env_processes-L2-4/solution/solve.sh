#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
env | grep '^JOB_' | sort > candid_planet.txt
)
cd "$WD"
