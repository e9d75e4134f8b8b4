#!/bin/bash
cd /workspace
for b in backups/*.tar.gz; do
  member=$(tar -tzf "$b" | grep -E '(^|/)secret\.key$' | head -n 1)
  if [ -n "$member" ]; then
    tar -xzOf "$b" "$member" > secret.key
    basename "$b" > found_in.txt
    break
  fi
done
