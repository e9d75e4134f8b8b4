#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat > 'walnut (2).sh' <<'EOF'
#!/bin/bash
if [ ! -f "$1" ]; then
  echo "not found: $1" >&2
  exit 1
fi
grep -c ferry "$1"
EOF
)
cd "$WD"
(
chmod +x 'walnut (2).sh'
)
cd "$WD"
(
./'walnut (2).sh' 'wise badge.txt'
)
cd "$WD"
