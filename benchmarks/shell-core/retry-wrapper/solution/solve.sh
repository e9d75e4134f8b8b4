#!/bin/bash
cat > /workspace/retry.sh <<'SCRIPT'
#!/bin/bash
n=$1; shift
status=1
for ((k = 1; k <= n; k++)); do
  echo "attempt $k/$n" >&2
  "$@"
  status=$?
  [ $status -eq 0 ] && exit 0
done
exit $status
SCRIPT
chmod +x /workspace/retry.sh
