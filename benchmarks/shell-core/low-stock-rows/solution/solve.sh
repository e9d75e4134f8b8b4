#!/bin/bash
python3 - <<'PY'
import csv
with open("/workspace/inventory.csv", newline="") as src, open("/workspace/low_stock.csv", "w", newline="") as dst:
    reader = csv.DictReader(src)
    writer = csv.DictWriter(dst, fieldnames=reader.fieldnames, lineterminator="\n")
    writer.writeheader()
    for row in reader:
        if int(row["qty"]) < 10:
            writer.writerow(row)
PY
