#!/bin/bash
# logs.tar.gz holds exactly logs/<x>.log with the original bytes; originals gone, others kept.
mkdir -p /logs/verifier
check() {
  cd /workspace || return 1
  [ -z "$(find logs -maxdepth 1 -name '*.log')" ] || return 1
  [ -f logs/logrotate.conf ] && [ -f logs/README ] && [ -f logs/web-2024-04-30.log.1 ] || return 1
  /usr/bin/python3 - <<'PY'
import os, sys, tarfile
try:
    tf = tarfile.open("/workspace/logs.tar.gz", "r:gz")
    members = {m.name[2:] if m.name.startswith("./") else m.name: m for m in tf.getmembers() if m.isfile()}
except Exception:
    sys.exit(1)
exp_dir = "/tests/expected/archived_logs"
want = {"logs/" + n: open(os.path.join(exp_dir, n), "rb").read() for n in os.listdir(exp_dir)}
if set(members) != set(want):
    sys.exit(1)
for name, data in want.items():
    if tf.extractfile(members[name]).read() != data:
        sys.exit(1)
PY
}
if check; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
