"""Filesystem state probe: snapshots for hindsight relabeling, and the verifier of its tasks.

Runs inside the sandbox with whatever python3 is there (3.8+, standard library only), so it
must not import clawloop. Two uses:

  python3 - snapshot ROOT [MAX_ENTRIES]    (script on stdin) prints the state of ROOT as JSON:
      {"root": ROOT, "truncated": bool, "entries": {relpath: entry}} where an entry is
      {"t": "f", "mode", "size", "sha256"} (regular file), {"t": "d", "mode"} (directory),
      {"t": "l", "target", "real"} (symbolic link, not followed; real: where it resolves) or {"t": "o", "mode"} (anything else).
  python3 /tests/check_state.py /tests/expected.json   exits 0 when every check holds and
      prints the first failing one otherwise. Checks (absolute paths):
      file   regular file (not a link) whose sha256 is `sha256` [and mode `mode`]
      dir    directory (not a link) [with mode `mode`]
      link   symbolic link whose target resolves to `resolves` (the literal target may differ)
      absent nothing at path, not even a dangling link
      mode   permission bits of the file or directory at path (not a link) equal `mode`
"""

import hashlib
import json
import os
import stat
import sys


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 16)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def _entry(path):
    st = os.lstat(path)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return {"t": "l", "target": os.readlink(path), "real": os.path.realpath(path)}
    if stat.S_ISREG(st.st_mode):
        try:
            digest = _sha256(path)
        except OSError:
            digest = None
        return {"t": "f", "mode": mode, "size": st.st_size, "sha256": digest}
    if stat.S_ISDIR(st.st_mode):
        return {"t": "d", "mode": mode}
    return {"t": "o", "mode": mode}


def snapshot(root, max_entries=20000):
    """The state of everything under `root` (root itself excluded), links not followed."""
    entries = {}
    truncated = False
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(dirs) + sorted(names):
            p = os.path.join(d, n)
            if len(entries) >= max_entries:
                truncated = True
                break
            try:
                entries[os.path.relpath(p, root)] = _entry(p)
            except OSError:
                continue
        if truncated:
            break
    return {"root": root, "truncated": truncated, "entries": entries}


def _mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def check_one(c):
    """None when the check holds, else a one-line reason."""
    kind, path = c["t"], c["path"]
    if kind == "absent":
        return None if not os.path.lexists(path) else "still present: " + path
    if not os.path.lexists(path):
        return "missing: " + path
    if kind == "link":
        if not os.path.islink(path):
            return "not a symbolic link: " + path
        got = os.path.realpath(path)
        return None if got == c["resolves"] else f"{path} points to {got}"
    if os.path.islink(path):
        return "unexpected symbolic link: " + path
    if kind == "file":
        if not os.path.isfile(path):
            return "not a regular file: " + path
        if _sha256(path) != c["sha256"]:
            return ("changed: " if c.get("keep") else "wrong content: ") + path
    elif kind == "dir":
        if not os.path.isdir(path):
            return "not a directory: " + path
    elif kind != "mode":
        return "unknown check " + kind
    if "mode" in c and _mode_of(path) != c["mode"]:
        return "mode of {} is {:o}, not {:o}".format(path, _mode_of(path), c["mode"])
    return None


def check(spec_path):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    for c in spec["checks"]:
        try:
            why = check_one(c)
        except OSError as e:
            why = "{}: {}".format(c.get("path"), e)
        if why:
            print(why)
            return 1
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "snapshot":
        limit = int(argv[3]) if len(argv) > 3 else 20000
        sys.stdout.write(json.dumps(snapshot(argv[2], limit), sort_keys=True))
        return 0
    if len(argv) == 2:
        return check(argv[1])
    sys.stderr.write("usage: state_probe.py snapshot ROOT [MAX] | state_probe.py EXPECTED.json\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
