#!/bin/bash
cd /workspace
python3 - <<'PY'
import csv
with open("customers_history.csv", newline="", encoding="utf-8") as f:
    reader = csv.DictReader(f)
    fields = reader.fieldnames
    latest = {}
    for row in reader:
        cur = latest.get(row["id"])
        if cur is None or row["updated_at"] >= cur["updated_at"]:
            latest[row["id"]] = row
with open("customers_current.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for key in sorted(latest, key=int):
        w.writerow(latest[key])
PY
