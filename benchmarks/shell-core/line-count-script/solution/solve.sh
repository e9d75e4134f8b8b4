#!/bin/bash
cat > /workspace/count_lines.sh <<'SCRIPT'
#!/bin/bash
for f in "$@"; do
  n=$(wc -l < "$f")
  printf '%s %s\n' "$n" "$f"
done
SCRIPT
chmod +x /workspace/count_lines.sh
