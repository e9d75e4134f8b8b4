#!/bin/bash
python3 - <<'PY'
import json
users = json.load(open("/workspace/users.json"))
with open("/workspace/active_users.txt", "w") as f:
    for u in users:
        if u.get("active") is True:
            f.write(u["name"] + "\n")
PY
