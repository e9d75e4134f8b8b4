#!/bin/bash
cd /workspace
for f in packages/*/pyproject.toml; do
  awk '
    /^\[/ { in_project = ($0 == "[project]") }
    in_project && /^version[ \t]*=[ \t]*"[0-9]+\.[0-9]+\.[0-9]+"[ \t]*$/ {
      q1 = index($0, "\"")
      rest = substr($0, q1 + 1)
      q2 = index(rest, "\"")
      ver = substr(rest, 1, q2 - 1)
      n = split(ver, part, ".")
      part[3] = part[3] + 1
      $0 = substr($0, 1, q1) part[1] "." part[2] "." part[3] substr(rest, q2)
    }
    { print }
  ' "$f" > "$f.new" && mv "$f.new" "$f"
done
