#!/bin/bash
cd /workspace
# new and changed files
cp -a site-build/. site-live/
cd site-live
# files that are not in the build (uploads/ excluded)
find . -path ./uploads -prune -o -type f -print0 | while IFS= read -r -d '' f; do
  [ -e "../site-build/$f" ] || rm -- "$f"
done
# folders that are not in the build, deepest first (uploads/ excluded)
find . -mindepth 1 -path ./uploads -prune -o -type d -print0 | sort -rz | while IFS= read -r -d '' d; do
  [ -d "../site-build/$d" ] || rm -rf -- "$d"
done
