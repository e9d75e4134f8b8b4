#!/bin/bash
# audit.txt shows exactly the two variables; script unchanged.
mkdir -p /logs/verifier
check() {
  cmp -s /workspace/audit.txt /tests/expected.txt || return 1
  cmp -s /workspace/audit_env.sh /tests/orig_audit_env.sh
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
