#!/bin/bash
cd "/workspace/Photos From Trip"
for f in *' '*; do
  mv -- "$f" "${f// /_}"
done
