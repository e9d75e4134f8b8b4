#!/bin/bash
cd /workspace/tool
git checkout -q main
git merge feature -m "Merge branch 'feature'" >/dev/null || true
printf '1.5.0\n' > VERSION
printf '# Changelog\n\n## 1.5.0\n- Add CSV export\n\n## 1.4.1\n- Fix crash on empty input\n\n## 1.4.0\n- Initial public release\n' > CHANGELOG.md
git add VERSION CHANGELOG.md
git commit -q --no-edit
