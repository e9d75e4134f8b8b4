#!/bin/bash
# Builds the tool repository: main and feature diverge and both touch VERSION and CHANGELOG.md.
set -e
mkdir -p /workspace/tool && cd /workspace/tool
git init -q -b main
git config user.name "Tool Dev"
git config user.email dev@tool.example
n=0
commit() { n=$((n + 1)); GIT_AUTHOR_DATE="2024-03-0$n 12:00:00 +0000" GIT_COMMITTER_DATE="2024-03-0$n 12:00:00 +0000" git commit -q -m "$1"; }
printf '1.4.0\n' > VERSION
printf '# Changelog\n\n## 1.4.0\n- Initial public release\n' > CHANGELOG.md
printf 'def run():\n    return "ok"\n' > tool.py
git add -A && commit "Release 1.4.0"
git checkout -q -b feature
printf 'def export_csv(rows):\n    return "\\n".join(",".join(r) for r in rows)\n' > export.py
printf '1.5.0\n' > VERSION
printf '# Changelog\n\n## 1.5.0\n- Add CSV export\n\n## 1.4.0\n- Initial public release\n' > CHANGELOG.md
git add -A && commit "Add CSV export for 1.5.0"
git checkout -q main
printf 'def run():\n    return "ok"  # fixed crash on empty input\n' > tool.py
printf '1.4.1\n' > VERSION
printf '# Changelog\n\n## 1.4.1\n- Fix crash on empty input\n\n## 1.4.0\n- Initial public release\n' > CHANGELOG.md
git add -A && commit "Hotfix 1.4.1"
