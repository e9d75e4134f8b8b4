#!/bin/bash
# Exercise backup.sh on a directory with spaces (with and without trailing slash) and on errors.
mkdir -p /logs/verifier
check() {
  [ -x /workspace/backup.sh ] || return 1
  d=$(mktemp -d)
  mkdir -p "$d/my project/src" "$d/elsewhere"
  printf 'hello\n' > "$d/my project/src/main.c"
  printf 'readme\n' > "$d/my project/README"
  out=$(cd "$d/elsewhere" && /workspace/backup.sh "$d/my project/" 2>/dev/null); rc=$?
  [ $rc -eq 0 ] && [ "$out" = "$d/my project.tar.gz" ] || return 1
  [ -f "$d/my project.tar.gz" ] || return 1
  list=$(tar -tzf "$d/my project.tar.gz" | sed 's|^\./||; s|/$||' | LC_ALL=C sort | tr '\n' '|')
  [ "$list" = "my project|my project/README|my project/src|my project/src/main.c|" ] || return 1
  [ "$(tar -xzOf "$d/my project.tar.gz" "my project/src/main.c" 2>/dev/null || tar -xzOf "$d/my project.tar.gz" "./my project/src/main.c")" = hello ] || return 1
  rm "$d/my project.tar.gz"
  out=$(cd "$d" && /workspace/backup.sh "my project" 2>/dev/null); rc=$?
  [ $rc -eq 0 ] && [ "$out" = "my project.tar.gz" ] && [ -f "$d/my project.tar.gz" ] || return 1
  # errors: missing dir and a regular file
  out=$(cd "$d" && /workspace/backup.sh "$d/nope" 2>"$d/err"); rc=$?
  [ $rc -eq 1 ] && [ -z "$out" ] && [ -s "$d/err" ] && [ ! -e "$d/nope.tar.gz" ] || return 1
  out=$(cd "$d" && /workspace/backup.sh "$d/my project/README" 2>"$d/err"); rc=$?
  [ $rc -eq 1 ] && [ -z "$out" ] && [ -s "$d/err" ] && [ ! -e "$d/my project/README.tar.gz" ] || return 1
  out=$(cd "$d" && /workspace/backup.sh 2>"$d/err"); rc=$?
  [ $rc -eq 1 ] && [ -z "$out" ] && [ -s "$d/err" ] || return 1
  rm -rf "$d"
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
