#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat > 'dusty dune.sh' <<'EOF'
#!/bin/bash
if [ ! -f "$1" ]; then
  echo "missing: $1" >&2
  exit 1
fi
grep -c crystal "$1"
EOF
)
cd "$WD"
(
chmod +x 'dusty dune.sh'
)
cd "$WD"
(
./'dusty dune.sh' tidy-plaza.txt
)
cd "$WD"
