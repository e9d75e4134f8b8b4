"""Verification per benchmark format: one adapter per format, looked up once per task run.

Every format keeps the episode protocol (`clawloop.core.tasks.verifier`: the hidden verifier goes in
only after the agent, in a clean world with a fresh /logs/verifier); what differs is what the
verifier's output means and what else a run may need:

- `standard` (Harbor task dirs, clawloop JSONL pools, synthesized tasks): the reward file is the
  verdict;
- `clawgym`: the standard verifier, plus the wrapper's own reason when reward.sh broke;
- `claw-eval-live`: the verifier snapshots the environment and the task's grader.py scores it in
  the sandbox, with the episode's transcript; tasks that need the benchmark's mock services are skipped;
- `answer` (synthesized tasks that ask the agent to print the answer): the standard verifier,
  with the agent's last observation from the host's record written into its files
  (`clawloop.core.tasks.answer`);
- `intercode`: InterCode-Bash's reward: the gold command replayed in a second, pristine sandbox,
  both file systems walked, the agent's last observation from the host's record of the episode,
  all written into the verifier's files; the verifier computes the reward from them.

The loader of each format writes its record into `task.metadata` (`answer`, `clawgym`,
`claw_eval_live`, `intercode`),
which travels with the task through pools, Parquet and GRPO rows; `adapter_for` picks the adapter
from it. Callers never branch on the format: `TaskEnvironment.verify` asks the adapter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from clawloop.core.tasks import answer, clawgym, intercode
from clawloop.core.tasks import claw_eval_grading as ceg
from clawloop.core.tasks import claw_eval_live as cel
from clawloop.core.tasks.task import Task
from clawloop.core.tasks.verifier import Verdict, run_verifier, verdict
from sandbox.base import ExecResult, Sandbox

Transcript = list[dict[str, Any]]
"""OpenAI-style messages of the episode (the harness's conversation)."""
Steps = Sequence[tuple[str, ExecResult]]
"""The (command, result) pairs the agent ran through the environment, in order."""


class FormatAdapter:
    """The standard adapter: the reward file of the verifier's clean world is the verdict."""

    name = "standard"
    benchmark: str | None = None
    """Benchmark name carried by episode records (fractional scores), None for plain tasks."""

    def claims(self, task: Task) -> bool:
        """Whether the loader marked `task` as this adapter's format."""
        return True

    def skip_reason(self, task: Task) -> str | None:
        """Why the task cannot run anywhere (beyond a missing Docker image), else None."""
        return None

    def verify(self, sb: Sandbox, task: Task, messages: Transcript | None, steps: Steps) -> Verdict:
        """Run the verifier in a clean world on the workspace as the agent left it."""
        with run_verifier(sb, task) as run:
            return verdict(run.logs, run.result, task.limits.verifier_timeout_s, run.duration_s)


class ClawGymAdapter(FormatAdapter):
    """ClawGym-Bench: the standard verifier; a broken reward.sh's reason replaces the generic one."""

    name = benchmark = "clawgym"

    def claims(self, task: Task) -> bool:
        return clawgym.is_clawgym(task)

    def verify(self, sb: Sandbox, task: Task, messages: Transcript | None, steps: Steps) -> Verdict:
        v = super().verify(sb, task, messages, steps)
        why = clawgym.reward_error(v.output) if v.outcome == "error" else None
        return dataclasses.replace(v, reason=why) if why else v


class ClawEvalLiveAdapter(FormatAdapter):
    """Claw-Eval-Live: snapshot and grader in the sandbox, with the transcript from the host."""

    name = benchmark = "claw-eval-live"

    def claims(self, task: Task) -> bool:
        return cel.is_claw_eval(task)

    def skip_reason(self, task: Task) -> str | None:
        return cel.skip_reason(task)

    def verify(self, sb: Sandbox, task: Task, messages: Transcript | None, steps: Steps) -> Verdict:
        # A scripted agent (oracle, no-op) has no conversation: one bash call per command it ran.
        return ceg.verify_claw_eval(sb, task, messages if messages is not None else
                                    ceg.transcript_from_steps(task, list(steps)))


class InterCodeAdapter(FormatAdapter):
    """InterCode-Bash: the gold command replayed in a pristine sandbox, InterCode's reward."""

    name = benchmark = "intercode"

    def claims(self, task: Task) -> bool:
        return intercode.is_intercode(task)

    def verify(self, sb: Sandbox, task: Task, messages: Transcript | None, steps: Steps) -> Verdict:
        return intercode.verify_intercode(sb, task, messages, steps)


class AnswerAdapter(FormatAdapter):
    """A task that asks for the answer on the terminal: the standard verifier, handed the agent's
    last observation (the host's record) as /tests/answer.txt."""

    name = "answer"

    def claims(self, task: Task) -> bool:
        return answer.is_answer_task(task)

    def verify(self, sb: Sandbox, task: Task, messages: Transcript | None, steps: Steps) -> Verdict:
        return super().verify(sb, answer.with_answer(task, answer.last_output(messages, steps)), messages, steps)


STANDARD = FormatAdapter()
ADAPTERS: dict[str, FormatAdapter] = {a.name: a for a in (ClawEvalLiveAdapter(), ClawGymAdapter(),
                                                          InterCodeAdapter(), AnswerAdapter(), STANDARD)}
"""Every adapter by name; `adapter_for` tries them in this order (standard claims any task)."""


def adapter_for(task: Task) -> FormatAdapter:
    """The adapter of the format the task was loaded from."""
    return next(a for a in ADAPTERS.values() if a.claims(task))
