#!/bin/bash
# settings.json parses and equals the original with server.port=8080 and server.tls=true.
mkdir -p /logs/verifier
check() {
  /usr/bin/python3 - <<'PY'
import json, sys
try:
    got = json.load(open("/workspace/settings.json"))
except Exception:
    sys.exit(1)
want = json.load(open("/tests/original.json"))
want["server"]["port"] = 8080
want["server"]["tls"] = True
ok = got == want and type(got["server"]["port"]) is int and got["server"]["tls"] is True
sys.exit(0 if ok else 1)
PY
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
