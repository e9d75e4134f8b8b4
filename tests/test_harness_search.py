"""The harness as a learnable artifact: edits proposed from the diagnosis, tried on a held-in
development split, kept only after a paired win there; budgets never raised."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from clawloop.artifacts.diagnosis import CapabilityReport, CellStats, FailureModeStats
from clawloop.config.train import HarnessSearchParams, PlaybookParams
from clawloop.core.agent.harness import HarnessConfig, system_prompt, tools_for
from clawloop.core.agent.playbook import POLICY_FILE, HarnessEdits, read_playbook
from clawloop.core.agent.tool_calls import TOOLS
from clawloop.core.paired import outcomes_of
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from clawloop.phases.train import harness_search as hs
from clawloop.phases.train.guards import BudgetLimits
from clawloop.policy.types import Generation

LIMITS = BudgetLimits(max_turns=6, command_timeout_s=10, max_new_tokens=96)
TEST_SH = 'if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'


def make_task(name: str, value: str) -> Task:
    return Task(instruction=f"Write {value} into {name}.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=TEST_SH.format(f=name, v=value))}))


def report(modes: dict[str, int], episodes: int = 20) -> CapabilityReport:
    return CapabilityReport(
        episodes=episodes, cells=[CellStats(skill="files", level=1, episodes=episodes, passes=5, pass_rate=0.25,
                                            ci_low=0, ci_high=1)],
        failure_modes=[FailureModeStats(mode=m, count=c, share=c / episodes) for m, c in modes.items()])


def test_the_dev_split_is_a_fixed_subset_of_the_pool() -> None:
    pool = [make_task(f"f{i}.txt", f"v{i}") for i in range(10)]
    split = hs.dev_split(pool, 4)
    assert len(split) == 4 and hs.dev_split(list(reversed(pool)), 4) == split
    assert hs.dev_split(pool[:2], 4) == sorted(pool[:2], key=lambda t: split.index(t) if t in split else 99) or \
        set(t.id for t in hs.dev_split(pool[:2], 4)) == {t.id for t in pool[:2]}


def test_rules_propose_from_the_diagnosis_and_never_past_a_limit() -> None:
    params = HarnessSearchParams()
    cut = [{"steps": [{"exit_code": 0, "output": "a\n[... 900 characters cut ...]\nb"}]}] * 3
    cands = hs.propose(report({"format_error": 8, "wrong_result": 6}), cut, HarnessEdits(), LIMITS, params)
    assert [c.edits for c in cands] == [HarnessEdits(format_hint="json_fence"),
                                        HarnessEdits(tool_descriptions="explicit"),
                                        HarnessEdits(observation_chars=4000),
                                        HarnessEdits(system_template="steps")]
    assert "format errors in 40%" in cands[0].why and "cut at 2000" in cands[2].why
    # a budget lowered earlier may go back up to rollout's limit, never past it; at the limit: nothing
    low = HarnessEdits(max_turns=3, command_timeout_s=2, format_hint="json_fence")
    up = hs.propose(report({"max_turns": 9, "timeout": 9, "format_error": 9}), [], low, LIMITS, params)
    assert HarnessEdits(max_turns=6, command_timeout_s=2, format_hint="json_fence") in [c.edits for c in up]
    assert HarnessEdits(max_turns=3, command_timeout_s=10, format_hint="json_fence") in [c.edits for c in up]
    assert up[0].edits.format_hint == "short"  # the next variant after the current one
    assert not hs.propose(report({"max_turns": 9, "timeout": 9}), [], HarnessEdits(), LIMITS, params)
    assert all(c.edits.max_turns in (None, 3, 6) for c in up)
    # the harness's own hint (rollout.format_hint) is where the rotation starts: never proposed again
    own = hs.propose(report({"format_error": 8}), [], HarnessEdits(), LIMITS, params, format_hint="json_fence")
    assert own[0].edits == HarnessEdits(format_hint="short")
    # ignored errors → the submit check; loops → a repeating reply drawn again; each proposed once
    habits = hs.propose(report({"error_ignored": 4, "premature_submit": 2, "repeated_action": 6}), [],
                        HarnessEdits(), LIMITS, params)
    assert [c.edits for c in habits] == [HarnessEdits(submit_check=True), HarnessEdits(repeat_resample=0.7)]
    assert "30% of episodes" in habits[0].why
    learned = HarnessEdits(submit_check=True, repeat_resample=0.7)
    assert not hs.propose(report({"error_ignored": 6, "repeated_action": 6}), [], learned, LIMITS, params)


def test_search_keeps_the_better_edit_rejects_worse_and_ties_and_refuses_a_budget_raise() -> None:
    better, worse, tie = (HarnessEdits(system_template="steps"), HarnessEdits(tool_descriptions="explicit"),
                          HarnessEdits(format_hint="short"))
    tasks = [f"dev/t{i}" for i in range(6)]
    verdicts = {HarnessEdits(): [1, 1, 0, 0, 0, 0], better: [1, 1, 1, 1, 1, 0], worse: [1, 0, 0, 0, 0, 0],
                tie: [1, 0, 1, 0, 0, 0]}
    calls: list[HarnessEdits] = []

    def evaluate(edits: HarnessEdits) -> dict[str, float]:
        calls.append(edits)
        return dict(zip(tasks, map(float, verdicts[edits]), strict=True))

    raise_ = HarnessEdits(max_turns=12)
    cands = [hs.Candidate(edits=e, why=w) for e, w in ((worse, "w"), (raise_, "r"), (tie, "t"), (better, "b"))]
    res = hs.search(cands, HarnessEdits(), evaluate, params=HarnessSearchParams(max_candidates=3), limits=LIMITS,
                    iteration=2, dev_tasks=tasks)
    assert raise_ not in calls and len(res.refused) == 1 and "not learnable upward" in res.refused[0]
    assert calls == [HarnessEdits(), worse, tie, better]  # the current harness once, then each candidate
    assert res.after == better and [t.kept for t in res.trials] == [False, False, True]
    assert res.trials[2].net == 3 and res.trials[2].comparison["gained"] == 3
    assert res.trials[0].net == -1 and "needs net >= 1" in res.trials[0].verdict
    assert res.trials[1].net == 0  # a tie keeps the current harness
    assert "system_template: configured -> steps (kept" in res.describe()
    strict = hs.search(cands, HarnessEdits(), evaluate, params=HarnessSearchParams(max_candidates=3, alpha=0.1),
                       limits=LIMITS)
    assert strict.after == HarnessEdits()  # 3 gained / 0 lost: one-sided p = 0.125 > 0.1
    assert hs.search([], HarnessEdits(), evaluate, params=HarnessSearchParams(), limits=LIMITS).skipped


class HarnessSensitivePolicy:
    """Writes the right value when the system prompt has the `steps` section, never under the
    explicit tool descriptions, else only for values starting with "a"; then submits."""

    policy_id = "sensitive"

    def __init__(self) -> None:
        self.conversations = 0

    def generate(self, conversations: Any, sampling: Any, *, tools: Any = None) -> list[Generation]:
        out = []
        for conv in conversations:
            turns = sum(m["role"] == "assistant" for m in conv)
            name, value = re.match(r"Write (\S+) into (\S+)\.", conv[1]["content"]).groups()[::-1]  # type: ignore[union-attr]
            right = "## Method" in conv[0]["content"] or (value.startswith("a") and tools == TOOLS)
            if turns == 0:
                self.conversations += 1
                cmd = f"echo {value if right else 'wrong'} > /workspace/{name}"
                text = "<tool_call>\n" + json.dumps({"name": "bash", "arguments": {"command": cmd}}) + "\n</tool_call>"
            else:
                text = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
            out.append(Generation(text=text, prompt_tokens=10, completion_tokens=5))
        return out


def test_the_search_end_to_end_on_real_rollouts(tmp_path: Path, backend: str) -> None:
    """A policy whose pass rate depends on the harness: the train step keeps the variant that wins on
    the dev split, rejects the one that loses, and every later rollout of the policy dir uses it."""
    from clawloop.config.params import load_params
    from clawloop.core.agent.rollout import RolloutConfig, run_rollouts
    from clawloop.core.io import write_json
    from clawloop.core.rollout_settings import rollout_settings
    from clawloop.phases.train.playbook import PlaybookStep, evolve_checkpoint, write_artifact

    pool = [make_task(f"f{i}.txt", v) for i, v in enumerate(["apple", "avocado", "kiwi", "lime", "plum", "fig"])]
    policy = HarnessSensitivePolicy()
    dev_runs: list[int] = []

    def run_dev(tasks: Any, cfg: HarnessConfig) -> dict[str, float]:
        dev_runs.append(len(tasks))
        eps = run_rollouts(tasks, policy, RolloutConfig(backend=backend, harness=cfg, batch_size=6), progress=False)
        return outcomes_of(eps, "dev")

    write_json(tmp_path / "diagnosis.json", report({"format_error": 6, "wrong_result": 8}).model_dump(mode="json"))
    out = tmp_path / "iter-1" / "checkpoint"
    out.mkdir(parents=True)
    params = PlaybookParams(reflector="rules", harness=HarnessSearchParams(dev_tasks=6, max_candidates=3))
    base = HarnessConfig(max_turns=4, command_timeout_s=10, format_hint="tool_call")
    step = PlaybookStep(1, tmp_path / "no-policy", out, tmp_path / "diagnosis.json", pool=pool, limits=LIMITS)
    evo = evolve_checkpoint("playbook", step, params, base, run_dev=run_dev)
    assert dev_runs == [6, 6, 6, 6]  # the current harness and three candidates, on the same six tasks
    search = evo.search
    assert search is not None and search.baseline == {"passed": 2, "graded": 6}
    trials = {t.change: t for t in search.trials}
    assert set(trials) == {"format_hint: configured -> json_fence", "tool_descriptions: configured -> explicit",
                           "system_template: configured -> steps"}
    assert trials["system_template: configured -> steps"].kept and trials["system_template: configured -> steps"].net == 4
    assert not trials["tool_descriptions: configured -> explicit"].kept  # lost the two it passed
    assert trials["tool_descriptions: configured -> explicit"].comparison["lost"] == 2
    assert not trials["format_hint: configured -> json_fence"].kept  # no flip: a tie keeps the current harness
    pb = read_playbook(out / POLICY_FILE)
    assert pb.harness == HarnessEdits(system_template="steps") == evo.playbook.harness
    art = tmp_path / "iter-1" / "playbook"
    write_artifact(art, evo.playbook, base, previous=evo.previous, reflection=evo.reflection, search=search)
    saved = json.loads((art / "harness.json").read_text())
    assert saved["after"]["system_template"] == "steps" and len(saved["dev_tasks"]) == 6
    md = (art / "playbook.md").read_text()
    assert "- system_template: configured -> steps" in md and "- rejected (rules): tool_descriptions" in md
    # the policy directory carries it: the loop's next rollouts (evaluation, probe) render the variant
    ctx = rollout_settings(load_params(Path(__file__).resolve().parents[1] / "profiles" / "playbook.yaml"))
    cfg = ctx.harness_for(out)
    assert "## Method" in system_prompt(pool[0], cfg) and tools_for(cfg) == TOOLS
    again = run_rollouts(pool, policy, RolloutConfig(backend=backend, harness=cfg, batch_size=6), progress=False)
    assert all(e.outcome == "passed" for e in again)


def test_the_search_is_skipped_without_a_dev_split(tmp_path: Path) -> None:
    from clawloop.core.io import write_json
    from clawloop.phases.train.playbook import PlaybookStep, evolve_checkpoint

    write_json(tmp_path / "diagnosis.json", report({"wrong_result": 8}).model_dump(mode="json"))
    (tmp_path / "out").mkdir()
    step = PlaybookStep(1, tmp_path / "p", tmp_path / "out", tmp_path / "diagnosis.json", pool=[make_task("a.txt", "x")])
    evo = evolve_checkpoint("playbook", step, PlaybookParams(reflector="rules"), HarnessConfig(),
                            run_dev=lambda t, c: pytest.fail("ran"))
    assert evo.search is not None and "min_dev_tasks" in (evo.search.skipped or "")
    assert evo.playbook.harness == HarnessEdits() and evo.figures["harness_trials"] == 0
