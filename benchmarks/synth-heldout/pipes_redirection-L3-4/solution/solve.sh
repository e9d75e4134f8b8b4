#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
printf '%s\n' theme=4400 queue=true color=5383 > smoky_bucket.env
)
cd "$WD"
