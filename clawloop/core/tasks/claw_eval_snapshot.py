"""Claw-Eval-Live environment snapshot: runs INSIDE the sandbox, after the agent, as the verifier.

Copied to /tests with `clawloop_snapshot_spec.json`; stdlib only. It places the grader-only
files (`/tests/grader_files/<rel>` → `/workspace/<rel>`, as the benchmark injects them after the
agent), reads `env_snapshot_files` (`file:<path>` → {content, mime_type, encoding}) and runs
`env_snapshot_commands` in /workspace (`cmd:<command>` → {exit_code, stdout, stderr}), each with
the task's `env_snapshot_timeout`, and writes the whole snapshot to /logs/verifier/snapshot.json.
clawloop_grader.py (claw_eval_grader.py) calls it, then grades it with the task's own grader.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import json
import mimetypes
import os
import shutil
import signal
import subprocess

WORKSPACE = "/workspace"


def place_grader_files(rels: list[str]) -> None:
    for rel in rels:
        src = os.path.join("/tests/grader_files", rel)
        dst = os.path.join(WORKSPACE, rel)
        os.makedirs(os.path.dirname(dst) or WORKSPACE, exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst, dirs_exist_ok=True)
        elif os.path.exists(src):
            shutil.copy2(src, dst)


def read_payload(path: str) -> dict[str, object]:
    if not os.path.isfile(path):
        return {"error": "File not found: " + path}
    with open(path, "rb") as f:
        data = f.read()
    mime = mimetypes.guess_type(path)[0]
    try:
        return {"content": data.decode("utf-8"), "mime_type": mime or "text/plain", "encoding": "utf-8"}
    except UnicodeDecodeError:
        return {"content": base64.b64encode(data).decode("ascii"), "mime_type": mime or "application/octet-stream",
                "encoding": "base64", "size_bytes": len(data)}


def run(cmd: str, timeout: float) -> dict[str, object]:
    p = subprocess.Popen(["bash", "-c", cmd], cwd=WORKSPACE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"exit_code": -1, "stdout": "", "stderr": f"Timed out after {timeout}s"}
    return {"exit_code": p.returncode, "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace")}


def main() -> dict[str, object]:
    with open("/tests/clawloop_snapshot_spec.json") as f:
        spec = json.load(f)
    place_grader_files(spec.get("grader_files", []))
    snapshot: dict[str, object] = {}
    for pattern in spec.get("files", []):
        try:
            if "*" in pattern or "?" in pattern:
                for match in sorted(glob.glob(pattern, recursive=True))[:50]:
                    snapshot["file:" + match] = read_payload(match)
            else:
                snapshot["file:" + pattern] = read_payload(pattern)
        except Exception as e:  # one bad entry must not lose the snapshot
            snapshot["file:" + pattern] = {"error": str(e)}
    for cmd in spec.get("commands", []):
        try:
            snapshot["cmd:" + cmd] = run(cmd, spec.get("timeout", 10))
        except Exception as e:
            snapshot["cmd:" + cmd] = {"error": str(e)}
    os.makedirs("/logs/verifier", exist_ok=True)
    with open("/logs/verifier/snapshot.json", "w") as f:
        json.dump(snapshot, f)
    return snapshot


if __name__ == "__main__":
    main()
