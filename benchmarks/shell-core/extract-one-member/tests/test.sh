#!/bin/bash
# Only config/app.yaml was extracted, with the right content; the bundle is still there.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s config/app.yaml /tests/expected_app.yaml || return 1
  [ -f bundle.tar ] || return 1
  [ "$(find . -mindepth 1 ! -path './bundle.tar' | LC_ALL=C sort | tr '\n' ' ')" = "./config ./config/app.yaml " ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
