#!/bin/bash
cd /workspace/inbox
find . -mindepth 2 -type f -print0 | while IFS= read -r -d '' f; do
  rel=${f#./}
  mv -- "$f" "${rel//\//-}"
done
find . -mindepth 1 -depth -type d -empty -delete
