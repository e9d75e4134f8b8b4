#!/bin/bash
python3 - <<'PY'
import json
path = "/workspace/settings.json"
data = json.load(open(path))
data["server"]["port"] = 8080
data["server"]["tls"] = True
with open(path, "w") as f:
    json.dump(data, f, indent=2)
    f.write("\n")
PY
