#!/bin/bash
# Builds the billing repository with a fixed history; the last commit is the bad one.
set -e
mkdir -p /workspace/billing && cd /workspace/billing
git init -q -b main
git config user.name "Billing Dev"
git config user.email dev@billing.example
n=0
commit() { n=$((n + 1)); GIT_AUTHOR_DATE="2024-02-0$n 09:00:00 +0000" GIT_COMMITTER_DATE="2024-02-0$n 09:00:00 +0000" git commit -q -m "$1"; }
printf 'import math\n\ndef total(items):\n    return round(sum(items), 2)\n' > invoice.py
printf 'CURRENCY = "EUR"\n' > settings.py
git add -A && commit "Invoice totals"
printf 'CURRENCY = "EUR"\nVAT = 0.21\n' > settings.py
git add -A && commit "Add VAT setting"
printf '# Billing\n\nTotals are rounded to cents.\n' > README.md
git add -A && commit "Add README"
printf 'import math\n\ndef total(items):\n    return math.floor(sum(items) * 100) / 100\n' > invoice.py
printf '# Billing\n\nTotals are floored to cents.\n' > README.md
git add -A && commit "Switch rounding to floor"
