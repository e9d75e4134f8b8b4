#!/bin/bash
cat > /workspace/make_report.sh <<'SCRIPT'
#!/bin/bash
# Writes report.txt: one line per file in data/, "<name>: <lines> lines", sorted by name.
cd /workspace
: > report.txt
for path in data/*; do
  [ -f "$path" ] || continue
  f=${path#data/}
  n=$(wc -l < "$path")
  echo "$f: $n lines" >> report.txt
done
SCRIPT
bash /workspace/make_report.sh
