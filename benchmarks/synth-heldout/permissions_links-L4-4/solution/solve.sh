#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
ls -l service.yaml
)
cd "$WD"
(
ln -sf settings/ember29.yaml service.yaml
)
cd "$WD"
