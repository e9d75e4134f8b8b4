#!/bin/bash
# clawloop: the reference solution, one subshell per step
WD="$PWD"
(
cat > 'łódź_tunnel.sh' <<'EOF'
#!/bin/bash
if [ ! -f "$1" ]; then
  echo "no such file: $1" >&2
  exit 1
fi
grep -c cottage "$1"
EOF
)
cd "$WD"
(
chmod +x 'łódź_tunnel.sh'
)
cd "$WD"
(
./'łódź_tunnel.sh' token_maple.txt
)
cd "$WD"
