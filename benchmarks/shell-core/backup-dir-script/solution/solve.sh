#!/bin/bash
cat > /workspace/backup.sh <<'SCRIPT'
#!/bin/bash
dir=${1%/}
if [ -z "$1" ] || [ ! -d "$dir" ]; then
  echo "backup.sh: not a directory: ${1:-<none>}" >&2
  exit 1
fi
parent=$(dirname -- "$dir")
name=$(basename -- "$dir")
tar -czf "$dir.tar.gz" -C "$parent" -- "$name" || exit 1
echo "$dir.tar.gz"
SCRIPT
chmod +x /workspace/backup.sh
