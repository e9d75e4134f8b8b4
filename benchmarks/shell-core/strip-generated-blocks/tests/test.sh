#!/bin/bash
# proxy.conf equals the expected cleaned file byte for byte.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/proxy.conf /tests/expected.conf
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
