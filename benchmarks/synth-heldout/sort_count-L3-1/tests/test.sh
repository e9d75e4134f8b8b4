#!/bin/bash
# Procedural task verifier: reward 1 when every check in spec.json passes.
mkdir -p /logs/verifier
if python3 /tests/check.py /tests/spec.json; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
