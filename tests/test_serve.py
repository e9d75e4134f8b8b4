"""`clawloop serve`: OpenAI wire format in, tool_calls out, concurrent requests batched; and
OpenAIPolicy → clawloop serve → a local model, end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clawloop.core.agent.tool_calls import TOOLS, FormatError, assistant_message, parse_reply, tool_message
from clawloop.policy.openai import (
    OpenAIPolicy,
    from_openai_messages,
    reply_message,
    reply_text,
    to_openai_messages,
)
from clawloop.policy.serve import ServeConfig, make_server, url
from clawloop.policy.types import Generation, OpenAIPolicyConfig, SamplingParams

ROOT = Path(__file__).resolve().parents[1]
CALL = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>'

REPLIES = [
    CALL,
    "Let me look first.\n" + CALL,
    '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
    '<tool_call>\n{"name": "bash", "arguments": "{\\"command\\": \\"pwd\\"}"}\n</tool_call>',  # string args
    '<tool_call>\n{"name": "bash", "parameters": {"command": "pwd"}}',  # no end tag, "parameters"
    '<tool_call>\n{"name": "python", "arguments": {"code": "1"}}\n</tool_call>',  # unknown tool
    "<tool_call>\n{not json}\n</tool_call>",
    '<tool_call>\n{"arguments": {}}\n</tool_call>',  # no name
    '<tool_call>\n{"name": "bash", "arguments": {}}\n</tool_call>',  # bad arguments
    "```bash\nls\n```",  # prose
    "",
]


@pytest.mark.parametrize("text", REPLIES)
def test_a_reply_through_the_wire_parses_as_the_local_one(text: str) -> None:
    """server: text → OpenAI message; client: message → text; the harness sees the same call."""
    there = reply_text(json.loads(json.dumps(reply_message(text))))
    a, b = parse_reply(text), parse_reply(there)
    if isinstance(a, FormatError):
        assert isinstance(b, FormatError) and (a.kind, a.tool) == (b.kind, b.tool)
    else:
        assert b == a


def test_conversations_cross_the_wire_and_back() -> None:
    conv = [{"role": "system", "content": "s"}, {"role": "user", "content": "do it"},
            assistant_message("ls", "looking"), tool_message("a\n[exit code 0]"),
            {"role": "assistant", "content": "no call here"}, {"role": "user", "content": "hint"},
            assistant_message(None)]
    assert from_openai_messages(to_openai_messages(conv)) == conv
    parts = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert from_openai_messages(parts) == [{"role": "user", "content": "ab"}]


class Recorder:
    """A policy that records its batches and can be told to fail or run out of context."""

    policy_id = "recorder"

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.gate.set()

    def generate(self, conversations: list[list[dict[str, Any]]], sampling: SamplingParams, *,
                 tools: list[dict[str, Any]] | None = None) -> list[Generation]:
        self.gate.wait(5)
        self.calls.append(len(conversations))
        out = []
        for conv in conversations:
            last = str(conv[-1].get("content"))
            if last == "boom":
                raise RuntimeError("the model broke")
            if last == "huge":
                out.append(Generation("", 9000, 0, "context"))
                continue
            n = sum(m["role"] == "assistant" for m in conv)
            cmd = {"command": f"echo {n} {len(tools or [])} {sampling.max_new_tokens}"}
            out.append(Generation(f"<tool_call>\n{json.dumps({'name': 'bash', 'arguments': cmd})}\n</tool_call>",
                                  len(conv), 3))
        return out


@pytest.fixture()
def served() -> Iterator[tuple[str, Recorder]]:
    policy = Recorder()
    server = make_server(policy, ServeConfig(port=0, window_ms=50, max_wait_ms=500))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield url(server), policy
    server.shutdown()
    server.server_close()


def test_openai_policy_through_the_server_batches_concurrent_requests(served: tuple[str, Recorder]) -> None:
    base, policy = served
    client = OpenAIPolicy("any-name", OpenAIPolicyConfig(base_url=base, max_concurrency=8))
    convs = [[{"role": "user", "content": f"task {i}"}] for i in range(8)]
    policy.gate.clear()  # the first request waits in generate while the others queue up
    threading.Timer(0.3, policy.gate.set).start()
    gens = client.generate(convs, SamplingParams(temperature=0, max_new_tokens=7), tools=TOOLS)
    assert [parse_reply(g.text).command for g in gens] == ["echo 0 2 7"] * 8  # type: ignore[union-attr]
    assert sum(policy.calls) == 8 and len(policy.calls) <= 3 and max(policy.calls) >= 4
    assert all(g.prompt_tokens == 1 and g.completion_tokens == 3 for g in gens)
    health = httpx.get(base.removesuffix("/v1") + "/health").json()
    assert health["requests"] == 8 and health["largest_batch"] == max(policy.calls)
    assert httpx.get(base + "/models").json()["data"][0]["id"] == "recorder"
    # a prompt over the context ends the episode as a local backend would, not with an error
    assert client.generate([[{"role": "user", "content": "huge"}]], SamplingParams())[0].finish_reason == "context"
    client.close()


def test_the_server_refuses_bad_requests(served: tuple[str, Recorder]) -> None:
    base, _ = served
    post = lambda body: httpx.post(base + "/chat/completions", content=body,  # noqa: E731
                                   headers={"Content-Type": "application/json"})
    for body, code in [(b"{", "invalid_json"), (b"[]", "invalid_request"),
                       (json.dumps({"messages": []}).encode(), "invalid_request"),
                       (json.dumps({"messages": [{"role": "user", "content": "x"}], "stream": True}).encode(),
                        "invalid_request"),
                       (json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": -1}).encode(),
                        "invalid_request")]:
        r = post(body)
        assert r.status_code == 400 and r.json()["error"]["code"] == code, body
    r = post(json.dumps({"messages": [{"role": "user", "content": "boom"}]}).encode())
    assert r.status_code == 500 and "the model broke" in r.json()["error"]["message"]
    assert httpx.post(base + "/completions", json={}).status_code == 404
    r = post(json.dumps({"messages": [{"role": "user", "content": "x"}], "tools": TOOLS, "max_tokens": 5}).encode())
    body = r.json()
    assert r.status_code == 200 and body["choices"][0]["finish_reason"] == "tool_calls"
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "bash" and json.loads(call["arguments"]) == {"command": "echo 0 2 5"}


def test_serve_refuses_an_endpoint_as_the_model() -> None:
    from typer.testing import CliRunner

    from clawloop.cli import app

    res = CliRunner().invoke(app, ["serve", "openai:m@http://127.0.0.1:9/v1"])
    assert res.exit_code != 0 and "serve a local policy" in str(res.exception)
    # A bad backend option is named before any model is loaded (the directory does not exist).
    res = CliRunner().invoke(app, ["serve", "hf:/no/such/model", "--policy-set", "hf.engin=fast"])
    assert res.exit_code != 0 and "--policy-set: hf.engin: unknown key" in str(res.exception)


# --- end to end: OpenAIPolicy → `clawloop serve` (a subprocess) → the tiny scratch model ---------

@pytest.fixture(scope="module")
def serve_tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from clawloop.bootstrap.scratch import bootstrap

    model = tmp_path_factory.mktemp("serve") / "tiny"
    bootstrap(model, size="tiny", seed=0, corpus_pairs=2000)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    proc = subprocess.Popen([sys.executable, "-c", "from clawloop.cli import main; main()", "serve",
                             f"hf:{model}", "--port", "0", "--threads", "1", "--window-ms", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    line = ""
    for line in proc.stdout:
        if line.startswith("serving"):
            break
    m = re.search(r"at (http://\S+/v1)", line)
    assert m, f"clawloop serve did not start: {line}"
    yield m.group(1), model
    proc.terminate()
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0 and "stopped:" in out


@pytest.mark.slow
def test_openai_policy_to_clawloop_serve_to_a_scratch_model_end_to_end(
        serve_tiny: tuple[str, Path], tmp_path: Path) -> None:
    from clawloop.core.agent.harness import HarnessConfig
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.core.tasks.task import FileSpec, Task, Verifier
    from clawloop.policy.hf import HFPolicy, HFPolicyConfig
    from clawloop.policy.load import load_policy

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    base, model = serve_tiny
    client = load_policy(f"openai:tiny@{base}")
    local = HFPolicy(model, HFPolicyConfig(engine={"threads": 1}))
    conv = [{"role": "system", "content": "You are a shell agent."}, {"role": "user", "content": "List the files."}]
    greedy = SamplingParams(temperature=0, max_new_tokens=24)
    there, here = client.generate([conv], greedy, tools=TOOLS)[0], local.generate([conv], greedy, tools=TOOLS)[0]
    assert there.text == reply_text(reply_message(here.text))  # the same model, over the wire
    assert (there.prompt_tokens, there.completion_tokens) == (here.prompt_tokens, here.completion_tokens)
    test = 'if [ "$(cat /workspace/{f} 2>/dev/null)" = hi ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'
    tasks = [Task(instruction=f"Write hi into {f}.", skill="files",
                  verifier=Verifier(files={"test.sh": FileSpec(content=test.format(f=f))})) for f in ("a.txt", "b.txt")]
    config = RolloutConfig(k=2, batch_size=4, backend="bwrap", suite="served",
                           harness=HarnessConfig(max_turns=2, max_format_errors=2), sampling=greedy)
    res = run_rollouts(tasks, client, config, out_dir=tmp_path, progress=False)
    assert len(res) == 4 and all(r.outcome in ("passed", "failed") for r in res)
    assert all(r.n_turns >= 1 and r.prompt_tokens > 0 for r in res)
    assert list(tmp_path.glob("episodes-*.parquet"))
    health = httpx.get(base.removesuffix("/v1") + "/health").json()
    assert health["largest_batch"] >= 2  # the lockstep step arrived as one batch
