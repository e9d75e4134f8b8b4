import sys

total = 0
for lineno, line in enumerate(open(sys.argv[1]), 1):
    if lineno == 1:
        continue
    name, qty = line.strip().split(",")
    total += int(qty)
print("total", total)
