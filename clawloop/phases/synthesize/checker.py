"""The verifier of procedural tasks, shipped to /tests/check.py beside /tests/spec.json.

Runs inside the sandbox after the agent, with whatever python3 is there (3.8+, standard
library only), so it must not import clawloop. `python3 check.py spec.json` exits 0 when every
check passes and prints the first failing check otherwise (the agent never sees either).

Check kinds (all paths absolute):
  file    path is a regular file whose content equals `want` after normalization `norm`
  absent  nothing (not even a dangling link) at path
  dir     path is a directory
  mode    permission bits of path (links followed) equal `mode`
  link    path is a symbolic link resolving to the same file as `to`
  tree    the regular files under path (relative names) are exactly `files` (null: any content)
  archive the tar archive at path holds exactly the regular files `files` (leading ./ ignored)
  gz      path is gzip data whose text equals `want`
  run     `cmd` run with bash in `cwd` prints `want` (stdout, normalized) and exits `code`
Normalizations: exact (bytes), text (trailing newlines ignored), strip (surrounding blanks
ignored), lines (per-line trailing blanks and final newlines ignored), json (parsed values equal).
"""

import gzip
import json
import os
import stat
import subprocess
import sys
import tarfile


def _norm(data, how):
    if how == "exact":
        return data
    text = data.decode("utf-8", "replace")
    if how == "text":
        return text.rstrip("\n")
    if how == "strip":
        return text.strip()
    if how == "lines":
        return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))
    if how == "json":
        try:
            return json.loads(text)
        except ValueError:
            return ("not json", text)
    raise ValueError("unknown norm " + how)


def _same(got, want, how):
    want_b = want.encode("utf-8") if isinstance(want, str) else want
    return _norm(got, how) == _norm(want_b, how)


def _files_under(root):
    out = {}
    for d, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out[os.path.relpath(p, root)] = p
    return out


def _check(c):
    kind, path = c["t"], c.get("path", "")
    how = c.get("norm", "text")
    if kind == "file":
        if not os.path.isfile(path):
            return "missing file " + path
        with open(path, "rb") as f:
            ok = _same(f.read(), c["want"], how)
        return None if ok else "wrong content in " + path
    if kind == "absent":
        return None if not os.path.lexists(path) else "still present: " + path
    if kind == "dir":
        return None if os.path.isdir(path) else "missing directory " + path
    if kind == "mode":
        if not os.path.exists(path):
            return "missing " + path
        got = stat.S_IMODE(os.stat(path).st_mode)
        return None if got == c["mode"] else f"mode of {path} is {got:o}"
    if kind == "link":
        if not os.path.islink(path):
            return "not a symlink: " + path
        ok = os.path.exists(path) and os.path.samefile(path, c["to"])
        return None if ok else f"link {path} does not resolve to {c['to']}"
    if kind == "tree":
        if not os.path.isdir(path):
            return "missing directory " + path
        got = _files_under(path)
        if set(got) != set(c["files"]):
            return f"files under {path}: {sorted(got)}"
        for rel, want in sorted(c["files"].items()):
            if want is not None:
                with open(got[rel], "rb") as f:
                    if not _same(f.read(), want, how):
                        return "wrong content in " + got[rel]
        return None
    if kind == "archive":
        try:
            with tarfile.open(path) as tf:
                members = {}
                for m in tf.getmembers():
                    if m.isfile():
                        name = m.name[2:] if m.name.startswith("./") else m.name
                        members[name] = tf.extractfile(m).read()
        except (OSError, tarfile.TarError) as e:
            return f"bad archive {path}: {e}"
        if set(members) != set(c["files"]):
            return f"archive members: {sorted(members)}"
        for rel, want in c["files"].items():
            if want is not None and not _same(members[rel], want, how):
                return "wrong content of member " + rel
        return None
    if kind == "gz":
        try:
            with gzip.open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            return f"bad gzip {path}: {e}"
        return None if _same(data, c["want"], how) else "wrong content in " + path
    if kind == "run":
        try:
            p = subprocess.run(["bash", "-c", c["cmd"]], cwd=c.get("cwd", "/workspace"),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, timeout=c.get("timeout", 20))
        except subprocess.TimeoutExpired:
            return "timed out: " + c["cmd"]
        if "code" in c and p.returncode != c["code"]:
            return f"exit {p.returncode} from {c['cmd']}"
        if "want" in c and not _same(p.stdout, c["want"], how):
            return "wrong output of " + c["cmd"]
        return None
    return "unknown check " + kind


def main(spec_path):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    for c in spec["checks"]:
        try:
            err = _check(c)
        except Exception as e:  # a crash in a check is a failed check, never a pass
            err = f"{type(e).__name__}: {e}"
        if err:
            print("FAIL " + err, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tests/spec.json"))
