"""The agent harness: the prompt, the tools and the turns' texts of an episode.

The conversation uses the HF chat format, so any chat template with tool support renders it:

    {"role": "system", "content": system_prompt(task)}
    {"role": "user", "content": task.instruction}
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
        "function": {"name": "bash", "arguments": {"command": "ls"}}}]}
    {"role": "tool", "name": "bash", "content": "a.txt\\n[exit code 0]"}
    ...
    {"role": "assistant", "content": "", "tool_calls": [... "submit" ...]}

The model writes calls in the Qwen3 style, `<tool_call>\\n{"name": "bash", "arguments":
{"command": "..."}}\\n</tool_call>` (parsed by clawloop.core.agent.tool_calls); without any tag, one call
as a ```json fence or the bare reply is accepted too (`lenient_calls`; the step records its
`format`). A reply without a valid call gets a short hint (a user turn, with a placeholder where a
command goes, never one the model could copy) and counts as a format error; `max_format_errors`
in a row end the episode.

What the harness learned rides in the playbook (`config.playbook.harness`, a
clawloop.core.agent.playbook.HarnessEdits) and is applied here, to every episode of a policy that carries
it: the format-hint variant (`hint_message`), the observation length (read by
`EpisodeState.on_result`), the tool descriptions (`tools_for`), the system-template variant
(`system_prompt`) and the turn and command-time budgets (`episode_limits`), the submit check (`submit_check_on`) and the
redraw of a repeating reply (`repeat_temperature`). A budget edit only ever lowers a budget: it is applied as
`min(edit, the harness's limit, the task's own limit)`. The turn logic that uses all this is
clawloop.core.agent.episode.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clawloop.config.params import RolloutParams
from clawloop.core.agent.playbook import FORMAT_HINTS, SYSTEM_VARIANTS, FormatHint, HarnessEdits, Playbook
from clawloop.core.agent.tool_calls import (  # noqa: F401  (TOOLS, BASH_TOOL: re-exported)
    BASH_TOOL,
    TOOLS,
    FormatError,
    tools_variant,
)
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from sandbox.base import ExecResult, truncate_output

TEMPLATES = Path(__file__).parent / "templates"

ROLLOUT_FIELDS = ("max_turns", "command_timeout_s", "max_format_errors", "format_hint", "repeat_note",
                  "repeat_resample", "submit_check")
"""HarnessConfig's fields that params.yaml's `rollout` section sets (clawloop.config.params.RolloutParams,
the schema): their defaults are the schema's, so `HarnessConfig()` is the loop's harness."""
_SCHEMA = RolloutParams()


class HarnessConfig(BaseModel):
    """How one episode is run and prompted (layer: core.agent; one of five rollout types, docs/names.md);
    the task's own limits apply where a field is None. The fields of
    ROLLOUT_FIELDS default to the schema's `rollout` values (`of_rollout` builds one from a section)."""

    model_config = ConfigDict(extra="forbid")

    submit_tool: bool = True
    """End with a `submit` tool call; when False a reply without a tool call ends the episode."""
    max_turns: int | None = Field(_SCHEMA.max_turns, gt=0)
    """Most assistant turns (default: rollout.max_turns; None: task.limits.max_turns)."""
    command_timeout_s: float | None = Field(_SCHEMA.command_timeout_s, gt=0)
    """Timeout of one command (default: rollout.command_timeout_s; None: task.limits.command_timeout_s)."""
    episode_timeout_s: float | None = Field(None, gt=0)
    """Wall-clock budget of the agent's own commands (None: task.limits.agent_timeout_s). Generation
    is not counted: it is bounded by turns (`max_turns`) and tokens (the reply's max_tokens), so
    that a budget means the same at batch 1 and batch 36, where a row waits for the others'
    tokens and for their prefills."""
    max_format_errors: int = Field(_SCHEMA.max_format_errors, gt=0)
    """Consecutive replies without a valid tool call that end the episode."""
    observation_chars: int = Field(2000, gt=0)
    """Most characters of command output shown to the model (head + tail kept)."""
    max_reply_chars: int = Field(16_384, gt=0)
    """Longer replies are a format error and are stored cut to this length."""
    format_hint: FormatHint = _SCHEMA.format_hint
    """The format hint's variant (clawloop.core.agent.playbook.FORMAT_HINTS): the call form of the
    model's chat template (json_fence for the Qwen2.5 json template); a learned edit overrides it."""
    repeat_note: bool = _SCHEMA.repeat_note
    """Say so in the observation when a command repeats the previous one verbatim. Greedy small
    models loop: Qwen2.5-Coder-0.5B re-sent its last command in 26 of 32 held-out episodes that
    ran one (docs/experiments/2026-12-03-qwen-harness-levers.md)."""
    repeat_resample: float | None = Field(_SCHEMA.repeat_resample, gt=0)
    """When a reply repeats the episode's last command verbatim, draw that reply once more at this
    temperature (seeded like the rollout) before anything runs; None runs the repeat. Greedy small
    models loop: the Qwen base re-sent a command until the turn limit in 43 of 72 held-out
    shell-core episodes, and the repeat note alone stopped none (docs/experiments/2026-12-03-qwen-harness-levers.md)."""
    submit_check: bool = _SCHEMA.submit_check
    """Answer the episode's first `submit` with a note instead of ending it when no command has run
    yet or the last command failed (non-zero exit or timeout); a second submit ends it. After SFT
    on one-liners the Qwen policy submitted right after a failed command in 16 of its 51
    shell-core submits (`fatal: not a git repository`, `tar: Cannot open`). Training data drops
    the refused call and its note (`strip_submit_checks`), so the weights see the recovery, not
    the nudge."""
    lenient_calls: bool = True
    """Accept one call written without `<tool_call>` tags (a ```json fence or the bare reply), as
    real agent harnesses do; the step's `format` says so. False: only tagged calls count."""
    system_template: str = "system.j2"
    """Jinja template of the system prompt, in clawloop/core/agent/templates or an absolute path."""
    playbook: Playbook | None = None
    """The policy's playbook (clawloop.core.agent.playbook), rendered after the system prompt by
    `playbook_template`; None or an empty one adds nothing."""
    playbook_template: str = "playbook.j2"
    """Jinja template of the playbook block, in clawloop/core/agent/templates or an absolute path."""

    @classmethod
    def of_rollout(cls, rollout: RolloutParams) -> HarnessConfig:
        """The harness of a params.yaml `rollout` section (its ROLLOUT_FIELDS; the rest the library's)."""
        return cls(**{name: getattr(rollout, name) for name in ROLLOUT_FIELDS})


@lru_cache(maxsize=16)
def _template(name: str) -> Any:
    import jinja2

    path = Path(name) if Path(name).is_absolute() else TEMPLATES / name
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                             autoescape=False, loader=jinja2.FileSystemLoader(str(TEMPLATES)))
    env.filters["json"] = lambda v: json.dumps(v, ensure_ascii=False)
    return env.from_string(path.read_text(encoding="utf-8"))


def render(name: str, **variables: Any) -> str:
    """Render a prompt template of clawloop/core/agent/templates (or an absolute path)."""
    return _template(name).render(**variables)


def harness_edits(config: HarnessConfig | None) -> HarnessEdits:
    """What the harness learned, from the playbook `config` carries (none: no edits)."""
    pb = config.playbook if config is not None else None
    return pb.harness if pb is not None else HarnessEdits()


def submit_check_on(config: HarnessConfig) -> bool:
    """Whether submits are checked: the learned edit, else the harness's own setting."""
    learned = harness_edits(config).submit_check
    return config.submit_check if learned is None else learned


def repeat_temperature(config: HarnessConfig) -> float | None:
    """The temperature a repeating reply is drawn again at: the learned edit, else the harness's."""
    return harness_edits(config).repeat_resample or config.repeat_resample


def with_edits(config: HarnessConfig, edits: HarnessEdits) -> HarnessConfig:
    """`config` with its playbook's harness edits replaced by `edits` (a playbook made if none)."""
    pb = config.playbook or Playbook(token_budget=1)
    return config.model_copy(update={"playbook": pb.model_copy(update={"harness": edits})})


def tools_for(config: HarnessConfig | None = None) -> list[dict[str, Any]]:
    """The tools offered under `config`: bash, plus submit unless disabled, described as the
    learned tool-description variant says (the names and parameters never change)."""
    return tools_variant(harness_edits(config).tool_descriptions or "default",
                         submit=config is None or config.submit_tool)


def episode_limits(task: Task, config: HarnessConfig) -> tuple[int, float, float]:
    """(turns, command timeout, agent time) of an episode: the harness's, else the task's; a
    learned budget edit can only lower the first two (the guard against raising one's own budget,
    enforced here whatever a playbook.json says)."""
    edits = harness_edits(config)
    turns = config.max_turns or task.limits.max_turns
    timeout = config.command_timeout_s or task.limits.command_timeout_s
    if edits.max_turns is not None:
        turns = min(turns, edits.max_turns, task.limits.max_turns)
    if edits.command_timeout_s is not None:
        timeout = min(timeout, edits.command_timeout_s, task.limits.command_timeout_s)
    return turns, timeout, config.episode_timeout_s or task.limits.agent_timeout_s


def system_prompt(task: Task, config: HarnessConfig | None = None) -> str:
    """The system turn for `task` (from the system template, or the learned system variant's),
    then the playbook block if any."""
    config = config or HarnessConfig()
    max_turns, cmd_timeout, _ = episode_limits(task, config)
    variant = harness_edits(config).system_template
    template = SYSTEM_VARIANTS[variant] if variant is not None else config.system_template
    text = render(template, workdir=task.workdir, submit_tool=config.submit_tool,
                  max_turns=max_turns, command_timeout_s=cmd_timeout, task=task)
    block = playbook_block(config.playbook, config)
    return f"{text}\n\n{block}" if block else text


def playbook_block(playbook: Playbook | None, config: HarnessConfig | None = None) -> str:
    """The rendered playbook (templates/playbook.j2); empty without entries. The same text for
    every task, so the prompt prefix stays shared across a batch (KV reuse, prefix caching)."""
    if playbook is None or not playbook.entries:
        return ""
    config = config or HarnessConfig()
    return render(config.playbook_template, tips=playbook.tips, examples=playbook.examples,
                  submit_tool=config.submit_tool).strip()


@lru_cache(maxsize=1)
def default_system_prompt() -> str:
    """The system prompt of a task in /workspace with the task defaults (pretraining, copy probe)."""
    return system_prompt(Task(instruction="x", verifier=Verifier(files={"test.sh": FileSpec(content="true")})))


def initial_messages(task: Task, config: HarnessConfig | None = None) -> list[dict[str, Any]]:
    """System prompt and the task instruction as the user turn."""
    return [{"role": "system", "content": system_prompt(task, config)},
            {"role": "user", "content": task.instruction}]


def format_observation(result: ExecResult, *, limit: int = 2000, timeout_s: float | None = None,
                       repeated: bool = False, submit_tool: bool = True) -> str:
    """The tool turn for a command result: output (head + tail) and exit code; with `repeated`
    (the command equals the one before it), a line saying so and what to do instead."""
    output, _ = truncate_output(result.output.encode("utf-8", errors="replace"), limit)
    return render("observation.j2", output=output, exit_code=result.exit_code, timed_out=result.timed_out,
                  timeout_s=timeout_s if timeout_s is not None else result.duration_s,
                  repeated=repeated, submit_tool=submit_tool)


SUBMIT_CHECK = "submit_check"
"""The `name` of the tool turn that answers a checked submit (what `strip_submit_checks` cuts)."""


def submit_check_note(exit_code: int | None) -> str:
    """The answer to a checked submit: no command ran yet (`exit_code` None) or the last failed."""
    return render("submit_check.j2", exit_code=exit_code)


def strip_submit_checks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation without each checked submit: the assistant's submit call and the note
    answering it, so a trained policy learns to fix a failed command, not to wait for the note."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "tool" and m.get("name") == SUBMIT_CHECK and out and out[-1].get("role") == "assistant":
            out.pop()
            continue
        out.append(m)
    return out


_EXIT_MARK = "[exit code"
_EXIT = re.compile(r"\[exit code (-?\d+)")


def read_observation(text: str) -> tuple[str, int | None]:
    """(output, exit code) of a tool turn `format_observation` wrote: the output before its last
    exit-code line, and that code (None when the turn has none: the whole text is the output)."""
    if _EXIT_MARK not in text:
        return text, None
    codes = _EXIT.findall(text)
    return text[: text.rfind(_EXIT_MARK)], int(codes[-1]) if codes else None


def hint_message(error: FormatError, config: HarnessConfig | None = None) -> dict[str, Any]:
    """The user turn sent back after a format error."""
    config = config or HarnessConfig()
    template = FORMAT_HINTS[harness_edits(config).format_hint or config.format_hint]
    return {"role": "user", "content": render(template, reason=error.reason, submit_tool=config.submit_tool)}
