#!/bin/bash
# Drive retry.sh with a command that succeeds on the 3rd call, one that always fails, and args with spaces.
mkdir -p /logs/verifier
check() {
  [ -x /workspace/retry.sh ] || return 1
  d=$(mktemp -d)
  cat > "$d/flaky" <<'SH'
#!/bin/bash
n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$1"
echo "try $n"
[ $n -ge 3 ]
SH
  cat > "$d/fail7" <<'SH'
#!/bin/bash
echo "fail" ; exit 7
SH
  cat > "$d/args" <<'SH'
#!/bin/bash
printf '<%s>' "$@"; echo
SH
  chmod +x "$d/flaky" "$d/fail7" "$d/args"
  out=$(/workspace/retry.sh 5 "$d/flaky" "$d/count" 2>"$d/err"); rc=$?
  [ $rc -eq 0 ] && [ "$out" = $'try 1\ntry 2\ntry 3' ] || return 1
  [ "$(cat "$d/err")" = $'attempt 1/5\nattempt 2/5\nattempt 3/5' ] || return 1
  out=$(/workspace/retry.sh 2 "$d/fail7" 2>"$d/err"); rc=$?
  [ $rc -eq 7 ] && [ "$out" = $'fail\nfail' ] && [ "$(cat "$d/err")" = $'attempt 1/2\nattempt 2/2' ] || return 1
  out=$(/workspace/retry.sh 3 "$d/args" "a  b" "" 'c*' 2>"$d/err"); rc=$?
  [ $rc -eq 0 ] && [ "$out" = '<a  b><><c*>' ] && [ "$(cat "$d/err")" = 'attempt 1/3' ] || return 1
  rm -rf "$d"
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
