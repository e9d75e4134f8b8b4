#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat > solar-gravel.sh <<'EOF'
#!/bin/bash
if [ ! -f "$1" ]; then
  echo "not found: $1" >&2
  exit 1
fi
grep -c atlas "$1"
EOF
)
cd "$WD"
(
chmod +x solar-gravel.sh
)
cd "$WD"
(
./solar-gravel.sh 'façade desert.txt'
)
cd "$WD"
