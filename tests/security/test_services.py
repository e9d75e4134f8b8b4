"""Services and data (issue #51, D): what `clawloop view`, `report`, `serve` and `eval --agent
model` do with a careless option or with artifacts that came from a stranger (a DVC remote).

Each test plays the attacker: a `--out` that names the user's runs, a web page posting to the
local server, an episodes.jsonl or metrics.json shaped to crash the renderer, a pickled
checkpoint. The defence is one line naming the file and the field, a non-zero exit, no
traceback, and nothing deleted.
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from clawloop.core.io import write_json, write_jsonl
from clawloop.errors import ClawloopError
from clawloop.policy.load import load_policy
from clawloop.policy.openai import OpenAIPolicy
from clawloop.policy.serve import ServeConfig, make_server, url
from clawloop.policy.types import Generation, OpenAIPolicyConfig, SamplingParams
from clawloop.report.collect import collect
from clawloop.viewer import load_episodes, write_viewer
from clawloop.viewer.write import MARKER

BIN = Path(sys.executable).parent
SHELL_CORE = Path(__file__).resolve().parents[2] / "benchmarks" / "shell-core"

RECORD = {"task_id": "t1", "name": "hello", "suite": "shell-core", "skill": "files", "level": 1, "agent": "noop",
          "outcome": "failed", "reward": 0.0, "reason": None, "duration_s": 0.1, "verifier_output": "FAILED x",
          "steps": [{"command": "true", "exit_code": 0, "output": "", "timed_out": False, "duration_s": 0.0}]}


def clawloop(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The installed CLI, as a user runs it (its error handling is the thing under test)."""
    return subprocess.run([str(BIN / "clawloop"), *map(str, args)], capture_output=True, text=True, timeout=120)


def refused(p: subprocess.CompletedProcess[str], *words: str) -> None:
    """One error line, last, that names `words`; a non-zero exit; no traceback."""
    assert p.returncode != 0, p.stdout
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()  # progress lines may come before it
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], p.stderr
    for w in words:
        assert w in errors[0], (w, errors[0])


@pytest.fixture()
def records(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "eval" / "episodes.jsonl", [RECORD])
    return tmp_path / "eval"


# ------------------------------------------------------------------ 12: view --out deletes DIR
def test_view_out_does_not_wipe_a_directory_it_did_not_write(records: Path, tmp_path: Path) -> None:
    """`clawloop view EVAL --out runs` deleted the runs; now it refuses and keeps every byte."""
    runs = tmp_path / "runs"
    (runs / "iter-0").mkdir(parents=True)
    (runs / "iter-0" / "metrics.json").write_text("{}")
    refused(clawloop("view", records, "--out", runs), str(runs), "refusing")
    assert (runs / "iter-0" / "metrics.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval", "runs"]  # no build left behind

    # a file, and a link to a directory, are refused too (the link's target is kept)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ClawloopError, match="not a directory"):
        write_viewer([("g", records)], tmp_path / "notes.txt")
    (tmp_path / "link").symlink_to(runs)
    with pytest.raises(ClawloopError, match="symbolic link"):
        write_viewer([("g", records)], tmp_path / "link")
    assert (tmp_path / "notes.txt").read_text() == "mine" and (runs / "iter-0" / "metrics.json").exists()


def test_view_out_replaces_its_own_viewer(records: Path, tmp_path: Path) -> None:
    """A missing or empty directory is written; the viewer's own directory (its marker, or only
    viewer files: one written before the marker) is replaced; a file added to it makes it foreign
    only when the marker is gone."""
    site = tmp_path / "site"
    site.mkdir()
    write_viewer([("g", records)], site)  # empty: fine
    assert (site / MARKER).is_file() and (site / "index.html").is_file()
    (site / "data" / "chunk-0099.js").write_text("stale")
    write_viewer([("g", records)], site)  # its own: replaced, the stale chunk gone
    assert not (site / "data" / "chunk-0099.js").exists() and (site / MARKER).is_file()
    (site / MARKER).unlink()
    write_viewer([("g", records)], site)  # only viewer files: an older viewer, replaced
    (site / MARKER).unlink()
    (site / "keep.txt").write_text("x")
    with pytest.raises(ClawloopError, match="keep.txt"):
        write_viewer([("g", records)], site)
    assert (site / "keep.txt").read_text() == "x"
    write_viewer([("g", records)], tmp_path / "new" / "site")  # missing: made
    assert (tmp_path / "new" / "site" / MARKER).is_file()


# ------------------------------------------------------- 13: serve answers any web page
class Counting:
    """A policy that counts the conversations it was asked to answer."""

    policy_id = "counting"

    def __init__(self) -> None:
        self.asked = 0

    def generate(self, conversations: list[Any], sampling: Any, *, tools: Any = None) -> list[Generation]:
        self.asked += len(conversations)
        return [Generation("secret answer", 1, 2) for _ in conversations]


@contextmanager
def serving(**config: Any) -> Iterator[tuple[str, int, Counting]]:
    policy = Counting()
    server = make_server(policy, ServeConfig(port=0, window_ms=0, max_wait_ms=0, **config))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield url(server), server.server_address[1], policy
    finally:
        server.shutdown()
        server.server_close()


BODY = json.dumps({"messages": [{"role": "user", "content": "rm -rf ~"}]})


def test_serve_refuses_what_a_web_page_can_send() -> None:
    """A page's fetch(…, {method: "POST", body}) goes out as text/plain with no preflight; a DNS
    name rebound to 127.0.0.1 reaches the server with a foreign Host (and Origin) and can read the
    answer. Neither is answered, and the model is never asked."""
    with serving() as (base, port, policy):
        post = base + "/chat/completions"
        r = httpx.post(post, content=BODY, headers={"Content-Type": "text/plain;charset=UTF-8",
                                                    "Origin": "http://127.0.0.1:" + str(port)})
        assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
        r = httpx.post(post, content=BODY)  # no Content-Type at all
        assert r.status_code == 415
        json_headers = {"Content-Type": "application/json"}
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", f"127.0.0.1.evil.example:{port}"):
            r = httpx.post(post, content=BODY, headers={**json_headers, "Host": host})
            assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden_host", host
            assert httpx.get(base + "/models", headers={"Host": host}).status_code == 403
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null", f"http://localhost:{port + 1}"):
            r = httpx.post(post, content=BODY, headers={**json_headers, "Origin": origin})
            assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden_origin", origin
        assert policy.asked == 0
        # this machine's clients, by any of its local names (a browser on a local page included)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            r = httpx.post(post, content=BODY, headers={"Content-Type": "application/json; charset=utf-8",
                                                        "Host": host, "Origin": f"http://{host}"})
            assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "secret answer", host
        assert policy.asked == 3
    with serving(allowed_hosts=["gpu-box.lan"]) as (base, port, _):
        r = httpx.post(base + "/chat/completions", content=BODY,
                       headers={"Content-Type": "application/json", "Host": f"gpu-box.lan:{port}"})
        assert r.status_code == 200


def test_serve_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a token, a local process without it (another user's, or a page that got past the
    rest) gets nothing; OpenAIPolicy sends it from the environment variable it is told."""
    with serving(token="s3cret") as (base, _port, policy):
        post = base + "/chat/completions"
        for auth in (None, "Bearer wrong", "Basic s3cret", "Bearer"):
            r = httpx.post(post, content=BODY, headers={"Content-Type": "application/json",
                                                        **({"Authorization": auth} if auth else {})})
            assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key", auth
        assert httpx.get(base + "/health").status_code == 401 and policy.asked == 0
        monkeypatch.setenv("CLAWLOOP_SERVE_TOKEN", "s3cret")
        client = OpenAIPolicy("m", OpenAIPolicyConfig(base_url=base, api_key_env="CLAWLOOP_SERVE_TOKEN", retries=0))
        assert client.generate([[{"role": "user", "content": "hi"}]], SamplingParams())[0].text == "secret answer"
        client.close()


# ------------------------------------------- 14: malformed artifacts end in tracebacks
def _parquet_run(d: Path) -> Path:
    """A valid rollout directory of one episode (what a remote's runs/iter-N/eval holds)."""
    from clawloop.phases.diagnose.synthetic import episode_row, step_row, write_trajectories

    eid = "t1-0-r"
    write_trajectories(d, [episode_row(eid, suite="s", skill="files", level=1, outcome="failed",
                                       termination="submit", n_turns=1)],
                       [{**step_row("", 0, "ls", 0, output="x"), "episode_id": eid, "step": 0}])
    return d


def test_view_refuses_malformed_episode_records(tmp_path: Path) -> None:
    """episodes.jsonl lines shaped to crash the page's build: a non-object line, a non-string
    instruction, steps as a string. Each is one line naming the file, the line and the field."""
    d = tmp_path / "eval"
    write_jsonl(d / "episodes.jsonl", [RECORD, 5])
    refused(clawloop("view", d, "--out", tmp_path / "site"), "episodes.jsonl:2", "expected a JSON object")
    assert not (tmp_path / "site").exists()
    for field, value in (("instruction", 7), ("steps", "rm -rf ~"), ("task_id", None), ("steps", [3])):
        write_jsonl(d / "episodes.jsonl", [{**RECORD, field: value}])
        with pytest.raises(ClawloopError, match=rf"episodes.jsonl:1: {field}"):
            load_episodes(d / "episodes.jsonl")


def test_view_refuses_malformed_trajectory_parts(tmp_path: Path) -> None:
    """A Parquet part without `outcome`, with a null task_id, or with messages that are JSON but
    not a conversation: checked against the schema `clawloop check` uses before rendering."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = _parquet_run(tmp_path / "eval")
    (part,) = run.glob("episodes*.parquet")
    good = pq.read_table(part)
    assert load_episodes(run)[0]["task_id"] == "t1"  # the valid run renders
    pq.write_table(good.drop_columns(["outcome"]), part)
    refused(clawloop("view", run, "--out", tmp_path / "site"), part.name, "outcome: missing column")
    assert not (tmp_path / "site").exists() and part.exists()
    for column, value, words in (("task_id", None, "task_id: null in row 0"),
                                 ("messages", '{"role": "user"}', "messages: episode 't1-0-r'")):
        col = good.schema.get_field_index(column)
        field = good.schema.field(column)
        pq.write_table(good.set_column(col, field, pa.array([value], type=field.type)), part)
        with pytest.raises(ClawloopError, match=re.escape(words)):
            load_episodes(run)


def test_report_refuses_a_malformed_metrics_json(tmp_path: Path) -> None:
    """A metrics.json whose rate is a word (or a heldout.json of the wrong shape): one line
    naming the file and the field; nothing written. A number sent as a string is read as one."""
    runs = tmp_path / "runs"
    metrics = {"iteration": 0, "heldout_pass_rate": "high", "promoted": True, "best_heldout_pass_rate": 0.5,
               "policy_from": 0, "wall_s": 1.0}
    write_json(runs / "iter-0" / "metrics.json", metrics)
    refused(clawloop("report", runs, "--out", tmp_path / "report"), "metrics.json", "heldout_pass_rate")
    assert not (tmp_path / "report").exists()
    write_json(runs / "iter-0" / "metrics.json", {**metrics, "heldout_pass_rate": "0.5"})
    assert collect(runs)["heldout"][0]["rate"] == 0.5
    write_json(runs / "iter-0" / "heldout.json", {"iteration": 0, "checkpoint": "all", "policy": {},
                                                  "policy_from": 0, "base": {}})
    with pytest.raises(ClawloopError, match="heldout.json: checkpoint"):
        collect(runs)
    (runs / "iter-0" / "heldout.json").unlink()
    write_json(runs / "iter-0" / "pool" / "manifest.json", {"routines": {"procedural": {"plan": {
        "quotas": [{"skill": "git", "level": "one", "n": 2}]}}}})
    with pytest.raises(ClawloopError, match="manifest.json: malformed"):
        collect(runs)


def test_a_pickled_checkpoint_is_refused_by_name(tmp_path: Path) -> None:
    """`eval --agent model` on a checkpoint whose weights are a pickle: refused before torch sees
    it, one line, no traceback (torch's weights_only stopped the payload, with a traceback)."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"architectures": ["Qwen2ForCausalLM"]}')
    (ckpt / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": 1}))
    task = next(p for p in sorted(SHELL_CORE.iterdir()) if (p / "task.toml").is_file())
    refused(clawloop("eval", task, "--agent", "model", "--model", ckpt), str(ckpt), "pytorch_model.bin",
            "safetensors only")
    assert (ckpt / "pytorch_model.bin").exists()
    (ckpt / "pytorch_model.bin").rename(ckpt / "model.pt")
    for spec in (str(ckpt), f"vllm:{ckpt}", f"llamacpp:{ckpt}"):
        with pytest.raises(ClawloopError, match=r"only pickled weights \(model.pt\)"):
            load_policy(spec)


def test_training_refuses_a_pickled_base(tmp_path: Path) -> None:
    """The train stage's base check: a pickled-only checkpoint is named and refused (it accepted
    pytorch_model*.bin, which transformers would unpickle)."""
    from clawloop.artifacts.checkpoint import check_base

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    (ckpt / "tokenizer.json").write_text("{}")
    (ckpt / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": 1}))
    with pytest.raises(ClawloopError, match=r"pickled \(pytorch_model\*\.bin\).*safetensors only"):
        check_base(ckpt)
    (ckpt / "model.safetensors").write_bytes(b"")
    assert check_base(ckpt) == ckpt
