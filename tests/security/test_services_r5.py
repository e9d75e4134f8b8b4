"""Services and terminals (issue #75, C5), played as a stranger: a client of `clawloop serve`
that sends a huge body, or none, before it is even checked; a task whose name carries terminal
escapes (clear screen, OSC 52 sets the clipboard) that `eval` and error lines printed raw.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from clawloop.commands.eval_cmd import _print_summary
from clawloop.policy import serve
from clawloop.policy.serve import ServeConfig, make_server
from clawloop.policy.types import Generation

ROOT = Path(__file__).resolve().parents[2]
WORD_COUNT = ROOT / "tests" / "fixtures" / "harbor" / "word-count"
BIN = Path(sys.executable).parent
EVIL = "evil\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b1mname\r\nerror: fake"
"""A name that clears the screen, sets the clipboard (OSC 52), sends a C1 CSI and fakes a line."""


class Echo:
    policy_id = "echo"

    def __init__(self) -> None:
        self.asked = 0

    def generate(self, conversations: list[Any], sampling: Any, *, tools: Any = None) -> list[Generation]:
        self.asked += len(conversations)
        return [Generation("ok", 1, 1) for _ in conversations]


@contextmanager
def serving(**config: Any) -> Iterator[tuple[int, Echo]]:
    policy = Echo()
    server = make_server(policy, ServeConfig(port=0, window_ms=0, max_wait_ms=0, **config))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], policy
    finally:
        server.shutdown()
        server.server_close()


def _ask(port: int, head: dict[str, str], body: bytes = b"", *, trickle: float = 0.0, wait: float = 5.0) -> bytes:
    """Send a POST's headers (and `body`, byte by byte every `trickle` s when set) on a raw
    socket; what the server answered within `wait` s (b"" when nothing)."""
    lines = ["POST /v1/chat/completions HTTP/1.1", *(f"{k}: {v}" for k, v in head.items())]
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        try:
            if trickle:
                for b in body:
                    s.sendall(bytes([b]))
                    time.sleep(trickle)
            else:
                s.sendall(body)
        except OSError:  # the server closed the connection while the body was still coming
            pass
        got = b""
        try:  # the head, then the body its Content-Length names
            while b"\r\n\r\n" not in got and (chunk := s.recv(65536)):
                got += chunk
            head_end = got.find(b"\r\n\r\n") + 4
            length = next((int(line.split(b":")[1]) for line in got[:head_end].split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(got) < head_end + length and (chunk := s.recv(65536)):
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got


def _local(port: int, length: int, **extra: str) -> dict[str, str]:
    return {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Content-Length": str(length), **extra}


# ------------------------------------------------------------------ serve reads before it checks
def test_serve_checks_who_asks_and_how_much_before_reading_the_body() -> None:
    """A client that announces 512 MiB was read in full (RSS +512 MiB) before its Host, Origin
    and token were looked at. Now a foreign Host, a foreign Origin, a missing token and a body
    over MAX_BODY_BYTES are each answered at once, from the headers alone (no body is sent here:
    the old server waited for it forever)."""
    from clawloop.policy.serve import MAX_BODY_BYTES

    big = 512 << 20
    with serving(token="s3cret") as (port, policy):
        auth = {"Authorization": "Bearer s3cret"}
        got = _ask(port, {**_local(port, big, **auth), "Host": f"evil.example:{port}"})
        assert b" 403 " in got.split(b"\r\n")[0] and b"forbidden_host" in got, got[:200]
        got = _ask(port, _local(port, big, Origin="http://evil.example", **auth))
        assert b" 403 " in got.split(b"\r\n")[0] and b"forbidden_origin" in got, got[:200]
        got = _ask(port, _local(port, big))
        assert b" 401 " in got.split(b"\r\n")[0], got[:200]
        got = _ask(port, _local(port, MAX_BODY_BYTES + 1, **auth))
        assert b" 413 " in got.split(b"\r\n")[0] and b"too_large" in got, got[:200]
        assert policy.asked == 0
        # a request of the allowed size is still answered, on a connection kept open
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
        got = _ask(port, _local(port, len(body), **auth), body)
        assert b" 200 " in got.split(b"\r\n")[0] and policy.asked == 1, got[:200]
    assert MAX_BODY_BYTES == 16 << 20


def test_serve_cuts_off_a_stalled_or_trickled_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that sends its headers and then part of the body (or a byte now and then) held a
    server thread and its buffer for ever: each connection now has a read timeout, and a body
    must arrive within it in all (408)."""
    monkeypatch.setattr(serve._Handler, "timeout", 0.5)
    with serving() as (port, policy):
        t0 = time.monotonic()
        got = _ask(port, _local(port, 1000), b"{" * 10)  # 10 of 1,000 bytes, then silence
        assert b" 408 " in got.split(b"\r\n")[0], got[:200]
        got = _ask(port, _local(port, 1000), b"{" * 40, trickle=0.05)  # never 0.5 s apart
        assert b" 408 " in got.split(b"\r\n")[0], got[:200]
        assert time.monotonic() - t0 < 4 and policy.asked == 0


# ------------------------------------------------------------------ terminal escapes from input
def test_printable_escapes_control_characters() -> None:
    from clawloop.errors import printable

    shown = printable(EVIL)
    assert shown == "evil\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07\\x9b1mname\\r\\nerror: fake"
    assert shown.isprintable()
    assert printable("naïve tâche/ü 名前 a\\b") == "naïve tâche/ü 名前 a\\b"  # text is kept as it is


def test_eval_prints_a_task_name_with_escapes_escaped(tmp_path: Path) -> None:
    """`clawloop eval` printed an unloadable task's directory name, in the table and in its error
    line, with its escapes raw: the terminal cleared and the clipboard was set."""
    import shutil

    suite = tmp_path / "suite"
    shutil.copytree(WORD_COUNT, suite / EVIL.replace("\r\n", "-"))
    with (suite / EVIL.replace("\r\n", "-") / "task.toml").open("a") as f:
        f.write("\nbroken = = =\n")
    p = subprocess.run([str(BIN / "clawloop"), "eval", str(suite), "--agent", "noop"],
                       capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 2, out  # every task unloadable: eval says so in its exit status
    assert "\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07" in out, out
    assert not any(c in out for c in "\x1b\x07\x9b\r"), repr(out)


def test_eval_summary_escapes_every_name_from_input(capsys: pytest.CaptureFixture[str]) -> None:
    """Skill, suite and task names and reasons come from task files: none reaches the terminal raw."""
    row = {"tasks": 1, "passed": 0, "failed": 0, "errors": 1, "skipped": 0, "pass_rate": 0.0}
    summary = {"agent": "noop", "backend": "bwrap", "skills": {EVIL: row}, **row, "pass_rate": 0.0,
               "errors_detail": [{"suite": EVIL, "task": EVIL, "reason": EVIL}],
               "suites": {EVIL: {"mean_score": 0.5, "full_score_rate": 0.0}}}
    _print_summary(summary)
    out = capsys.readouterr().out
    assert out.count("\\x1b[2J") >= 4 and not any(c in out for c in "\x1b\x07\x9b\r"), repr(out)


def test_an_error_line_escapes_what_it_names(tmp_path: Path) -> None:
    """The CLI's one error line names files and fields from input (a pool path, a task name)."""
    pool = tmp_path / f"{EVIL.replace(chr(10), '-')}.jsonl"
    p = subprocess.run([str(BIN / "clawloop"), "tasks", "export", str(pool), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error: "), p.stderr
    assert "\\x1b]52;c;" in p.stderr and not any(c in p.stderr for c in "\x1b\x07\x9b\r"), repr(p.stderr)
