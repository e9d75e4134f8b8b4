#!/bin/bash
python3 - <<'PY'
import json
counts, bad = {}, 0
with open("/workspace/events.jsonl") as f:
    for line in f:
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        counts[event["type"]] = counts.get(event["type"], 0) + 1
with open("/workspace/summary.json", "w") as f:
    json.dump({"counts": counts, "invalid_lines": bad}, f, indent=2)
PY
