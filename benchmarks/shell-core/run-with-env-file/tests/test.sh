#!/bin/bash
# config_dump.txt is the script's output with app.env loaded; inputs unchanged.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  cmp -s config_dump.txt /tests/expected.txt || return 1
  cmp -s show_config.sh /tests/orig_show_config.sh && cmp -s app.env /tests/orig_app.env
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
