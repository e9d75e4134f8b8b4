#!/bin/bash
cd /workspace
export LC_ALL=C
# checksum<TAB>path, sorted by path; the first path seen for each checksum is kept
find photos -type f -print0 | sort -z | xargs -0 sha256sum | sed 's/^\([0-9a-f]*\)  /\1\t/' \
  | awk -F'\t' 'seen[$1]++ { print $2 }' | while IFS= read -r dup; do rm -- "$dup"; done
