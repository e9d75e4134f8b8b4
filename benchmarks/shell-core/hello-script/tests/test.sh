#!/bin/bash
# hello.sh is executable and greets correctly, with and without an argument.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ -x hello.sh ] || return 1
  [ "$(./hello.sh Ann)" = "Hello, Ann!" ] || return 1
  [ "$(./hello.sh 'Mary Jane')" = "Hello, Mary Jane!" ] || return 1
  [ "$(./hello.sh)" = "Hello, world!" ] || return 1
  [ "$(cd / && /workspace/hello.sh Zoë)" = "Hello, Zoë!" ]
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
