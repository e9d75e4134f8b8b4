#!/bin/bash
cd /workspace
python3 - <<'PY'
import csv
from decimal import Decimal
names = {r["customer_id"]: r["name"] for r in csv.DictReader(open("customers.csv", newline=""))}
totals = {}
for r in csv.DictReader(open("orders.csv", newline="")):
    if r["customer_id"] in names:
        name = names[r["customer_id"]]
        totals[name] = totals.get(name, Decimal(0)) + Decimal(r["amount"])
with open("report.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["name", "total"])
    for name in sorted(totals):
        w.writerow([name, f"{totals[name]:.2f}"])
PY
