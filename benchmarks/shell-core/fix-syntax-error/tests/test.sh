#!/bin/bash
# greet.sh runs and prints the greeting plus the closing line for each case.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ "$(bash greet.sh Sam 2>&1)" = $'Hi there, Sam\nHave a nice day.' ] || return 1
  [ "$(bash greet.sh 2>&1)" = $'Hi there, friend\nHave a nice day.' ] || return 1
  [ "$(bash greet.sh root 2>&1)" = $'Hi admin\nHave a nice day.' ] || return 1
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
