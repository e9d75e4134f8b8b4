#!/bin/bash
cd /workspace/frames
for f in frame*.png; do
  n=${f#frame}; n=${n%.png}
  case $n in ''|*[!0-9]*) continue;; esac
  new=$(printf 'frame%03d.png' "$((10#$n))")
  [ "$f" = "$new" ] || mv -- "$f" "$new"
done
