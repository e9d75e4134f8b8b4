#!/bin/bash
# Builds the shop repository with a fixed history.
set -e
mkdir -p /workspace/shop && cd /workspace/shop
git init -q -b main
git config user.name "Shop Dev"
git config user.email dev@shop.example
n=0
commit() { n=$((n + 1)); GIT_AUTHOR_DATE="2024-01-0$n 10:00:00 +0000" GIT_COMMITTER_DATE="2024-01-0$n 10:00:00 +0000" git commit -q -m "$1"; }
printf 'def checkout(cart):\n    return sum(cart)\n' > app.py
printf 'TIMEOUT = 30\n' > config.py
git add -A && commit "Initial import"
printf 'import logging\nlog = logging.getLogger("shop")\n' > logs.py
git add -A && commit "Add logging"
printf 'FEATURE_FLAG_Y = False\n' > flags.py
git add -A && commit "Introduce feature flags module (prep for FEATURE_FLAG_X)"
printf 'FEATURE_FLAG_Y = False\nFEATURE_FLAG_X = True\n' > flags.py
printf 'from flags import FEATURE_FLAG_X\n\ndef checkout(cart):\n    if FEATURE_FLAG_X:\n        return round(sum(cart) * 0.9, 2)\n    return sum(cart)\n' > app.py
git add -A && commit "Wire up discounted checkout experiment"
printf '# Flags\n\nFEATURE_FLAG_X toggles the discounted checkout.\n' > FLAGS.md
git add -A && commit "Document flags"
printf 'FEATURE_FLAG_Y = False\nFEATURE_FLAG_X = True\n' > flags.py
printf 'import flags\n\ndef checkout(cart):\n    if flags.FEATURE_FLAG_X:\n        return round(sum(cart) * 0.9, 2)\n    return sum(cart)\n' > app.py
git add -A && commit "Refactor flag access"
printf 'TIMEOUT = 45\n' > config.py
git add -A && commit "Raise timeout"
