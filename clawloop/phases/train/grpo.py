"""Multi-turn GRPO with TRL's GRPOTrainer on the environment path (`environment_factory`).

Each rollout gets a `ShellEnvironment`: `reset(**row)` begins the row's task as a fresh
`Episode` (clawloop.core.agent.episode: open and prepare), the public `bash` and `submit` methods are
the tools (their docstrings make exactly the harness's tool schemas, so GRPO prompts equal the
SFT/rollout prompts), and `get_reward` concludes the episode (the hidden verifier, then close). Infrastructure failures the
agent cannot have caused (setup, an error before its first command) return a reward of None: TRL
turns it into NaN, leaves the row out of the group baseline and zeroes its advantage
(`GRPOTrainer._generate_and_score_completions`, "unscorable" rows), so they are masked out rather
than scored 0. A sandbox or verifier error after the agent's commands ran scores 0
(`Episode.training_reward`): masking it would make breaking the judge better than failing.

Each tool call TRL parses is stepped through the episode's `EpisodeState`, as a rollout's reply is
(`ShellEnvironment._turn`): one set of turn rules for every driver (the turn limit and command
budget, the observation's shape and harness edits, the repeat note, the submit check). Where TRL's
tool loop still differs: a reply without a tool call ends the rollout (the harness sends a format
hint and goes on), and after `submit` TRL asks the model for one more turn whose tool calls no
longer run. `max_turns` also bounds TRL's tool-calling rounds.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from clawloop.artifacts.checkpoint import final_metrics, load_tokenizer, save_final
from clawloop.config.train import GRPOParams
from clawloop.core.agent.episode import Episode
from clawloop.core.agent.harness import HarnessConfig, initial_messages
from clawloop.core.agent.tool_calls import BASH_TOOL, CALL_OPENERS, SUBMIT_TOOL, response_template
from clawloop.core.tasks.environment import sandbox_config as episode_config
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError
from clawloop.phases.train.reference import call_text, scripted_reply
from clawloop.phases.train.sft import peft_config, precision_record, shared_args, trainer_model
from sandbox.base import SandboxConfig

if TYPE_CHECKING:
    import datasets


class ShellEnvironment:
    """One rollout's episode (clawloop.core.agent.episode), its tools called by TRL. Configure the
    class with `environment_factory(...)`."""

    backend: str = "bwrap"
    sandbox_config: SandboxConfig | None = None  # set per factory: the task runtime mounted, as in rollouts
    harness_config: HarnessConfig = HarnessConfig()
    registry: list[ShellEnvironment] = []
    stats: Counter[str] = Counter()
    lock = threading.Lock()

    def __init__(self) -> None:
        self.episode: Episode | None = None
        with self.lock:
            self.registry.append(self)

    @property
    def error(self) -> str | None:
        """Why the episode broke (setup, sandbox, verifier), else None."""
        return self.episode.reason if self.episode is not None and self.episode.outcome == "error" else None

    # -- TRL protocol ---------------------------------------------------------------------
    def reset(self, **row: Any) -> str | None:
        """Close the previous episode, begin the row's task in a fresh one (open and prepare)."""
        self._close()
        try:
            task = Task.from_json(orjson.loads(row["task"]))
        except (KeyError, ValueError, orjson.JSONDecodeError) as e:
            raise ClawloopError(f"GRPO dataset row: task: {e}") from None
        self.episode = Episode(task, self.backend, self.sandbox_config, self.harness_config)
        self.episode.begin()
        return None

    def bash(self, command: str):  # no return annotation: keeps the schema equal to tool_calls.BASH_TOOL
        """(Set from tool_calls.BASH_TOOL below.)"""
        return self._turn(call_text("bash", {"command": command}))

    def submit(self):  # no return annotation: keeps the schema equal to tool_calls.SUBMIT_TOOL
        """(Set from tool_calls.SUBMIT_TOOL below.)"""
        return self._turn(call_text("submit", {}))

    def _turn(self, reply: str) -> str:
        """One tool call of TRL's loop, stepped through the episode's EpisodeState as every rollout's
        reply is: the same turn limit and command budget, observation, repeat note and submit check.
        Returns what the harness sends back (the tool turn, a note), or why nothing ran."""
        ep = self.episode
        if ep is None or ep.outcome is not None or ep.state is None:
            return "[the sandbox is unavailable]"
        if ep.state.done:
            return ("[the task was already submitted]" if ep.state.termination == "submit"
                    else f"[the episode is over: {ep.state.termination}]")
        at = len(ep.state.messages)
        ep.step(scripted_reply(reply))
        if ep.outcome is not None:  # the sandbox broke while the command ran
            return "[the sandbox is unavailable]"
        sent = [m for m in ep.state.messages[at:] if m.get("role") != "assistant"]
        if sent:
            return str(sent[-1].get("content") or "")
        return "[submitted]" if ep.state.termination == "submit" else f"[the episode is over: {ep.state.termination}]"

    def get_reward(self) -> float | None:
        """The verifier's reward on the workspace as left (`Episode.training_reward`): 0 for a
        sandbox or verifier error the agent's commands may have caused, None (TRL masks it out)
        for infrastructure errors before the agent acted, and for skips."""
        if self.episode is None:
            outcome, reward = "error", None
        else:
            outcome, reward = self.episode.conclude(), self.episode.training_reward
        with self.lock:
            self.stats[outcome] += 1
            if outcome == "error" and reward is not None:
                self.stats["scored_error"] += 1  # of the errors, those scored 0 (not masked)
        return reward

    # -- cleanup --------------------------------------------------------------------------
    def _close(self) -> None:
        """Close the episode's sandbox (idempotent)."""
        if self.episode is not None:
            self.episode.close()

    @classmethod
    def close_all(cls) -> None:
        with cls.lock:
            envs = list(cls.registry)
        for env in envs:
            env._close()


def _google_docstring(tool: dict[str, Any]) -> str:
    """A docstring from which transformers' get_json_schema rebuilds `tool` exactly."""
    fn = tool["function"]
    props = fn.get("parameters", {}).get("properties", {})
    args = "".join(f"    {k}: {v.get('description', k)}\n" for k, v in props.items())
    return fn["description"] + (f"\n\nArgs:\n{args}" if args else "")


# The tool docstrings are the harness's tool descriptions, so the schemas TRL renders into GRPO
# prompts stay identical to the ones SFT data and rollouts use (tests/test_grpo.py checks it).
ShellEnvironment.bash.__doc__ = _google_docstring(BASH_TOOL)
ShellEnvironment.submit.__doc__ = _google_docstring(SUBMIT_TOOL)


def environment_factory(backend: str = "bwrap", sandbox_config: SandboxConfig | dict[str, Any] | None = None,
                        harness_config: HarnessConfig | None = None) -> type[ShellEnvironment]:
    """A fresh ShellEnvironment subclass bound to a backend (its own registry and stats).

    `sandbox_config`: a SandboxConfig or its dict; None opens every sandbox as rollouts and
    reference trajectories do (`environment.default_config()`, the task runtime mounted)."""
    harness_config = harness_config or HarnessConfig()
    attrs: dict[str, Any] = {
        "backend": backend, "sandbox_config": episode_config(sandbox_config), "harness_config": harness_config,
        "registry": [], "stats": Counter(), "lock": threading.Lock(),
    }
    if not harness_config.submit_tool:
        attrs["submit"] = None  # not a function: TRL offers bash alone, as harness.tools_for does
    return type("ShellEnvironment", (ShellEnvironment,), attrs)


def grpo_dataset(tasks: Sequence[Task], harness_config: HarnessConfig | None = None) -> datasets.Dataset:
    """One row per task: the harness's opening messages as the prompt, the task as JSON."""
    import datasets
    from datasets import Features, Json, List, Value

    if not tasks:
        raise ClawloopError("GRPO: no tasks to train on (no learnable task in the probe?)")
    rows = {"prompt": [initial_messages(t, harness_config) for t in tasks],
            "task": [orjson.dumps(t.to_json()).decode() for t in tasks]}
    return datasets.Dataset.from_dict(rows, features=Features({"prompt": List(Json()), "task": Value("string")}))


def grpo_config(params: GRPOParams, output_dir: Path) -> Any:
    from trl import GRPOConfig

    if (params.per_device_train_batch_size * params.gradient_accumulation_steps) % params.num_generations:
        raise ClawloopError(
            f"grpo: per_device_train_batch_size × gradient_accumulation_steps "
            f"({params.per_device_train_batch_size} × {params.gradient_accumulation_steps}) must be a multiple "
            f"of num_generations ({params.num_generations})")
    return GRPOConfig(
        **shared_args(params, output_dir),
        beta=params.beta,
        num_generations=params.num_generations,
        max_completion_length=params.max_completion_length,
        max_tool_calling_iterations=params.max_turns,
        temperature=params.temperature,
        loss_type=params.loss_type,
        use_vllm=params.use_vllm,
        vllm_mode=params.vllm_mode,
    )


_PROBE_CALL = {"name": "bash", "arguments": {"command": "ls -la /workspace"}}


def reads_own_calls(tokenizer: Any) -> bool:
    """Whether the tokenizer's response template parses the tool call its chat template writes
    (TRL's tool loop reads every reply with it: a call it cannot read ends the rollout unrewarded)."""
    from trl.chat_template_utils import parse_response

    convo = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    call = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": _PROBE_CALL}]}
    tools = [BASH_TOOL, SUBMIT_TOOL]
    prefix = tokenizer.apply_chat_template(convo, tools=tools, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template([*convo, call], tools=tools, tokenize=False)
    if not full.startswith(prefix):
        return False
    ids = tokenizer(full[len(prefix):], add_special_tokens=False)["input_ids"]
    prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    try:
        calls = parse_response(tokenizer, ids, prefix=prefix_ids).get("tool_calls") or []
    except Exception:  # a template that cannot parse is the same answer as one that finds nothing
        return False
    return [c.get("function") for c in calls] == [_PROBE_CALL]


def fit_response_template(tokenizer: Any, where: str) -> Any:
    """`tokenizer` with a response template that reads its own calls: its own if it does, else the
    call form that does (a checkpoint bootstrapped before its spec named `call_form`); an error
    naming `where` when none does."""
    if reads_own_calls(tokenizer):
        return tokenizer
    own = getattr(tokenizer, "response_template", None)
    for form in CALL_OPENERS:
        tokenizer.response_template = response_template(form)
        if reads_own_calls(tokenizer):
            return tokenizer
    tokenizer.response_template = own
    raise ClawloopError(f"{where}: tokenizer: its response template does not read the tool calls its chat "
                        "template writes, so GRPO's rollouts would run no command (a template of another "
                        "call form: set the tokenizer's response_template)")


def build_trainer(base: Path, tasks: Sequence[Task], params: GRPOParams, output_dir: Path, *,
                  backend: str = "bwrap", sandbox_config: SandboxConfig | None = None,
                  harness_config: HarnessConfig | None = None, callbacks: list[Any] | None = None,
                  ) -> tuple[Any, type[ShellEnvironment]]:
    """A GRPOTrainer over `tasks` with one ShellEnvironment per rollout."""
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOTrainer

    tokenizer = fit_response_template(load_tokenizer(base), str(base))
    args = grpo_config(params, output_dir)
    model = trainer_model(base, params, args)
    env_cls = environment_factory(backend, sandbox_config, harness_config)
    try:
        trainer = GRPOTrainer(
            model=model,
            args=args,
            train_dataset=grpo_dataset(tasks, harness_config),
            processing_class=tokenizer,
            peft_config=peft_config(params.lora, base, params.trainable_layers),
            environment_factory=env_cls,
            callbacks=callbacks or None,
        )
    except ValueError as e:
        env_cls.close_all()
        if "chat template" in str(e).lower():
            raise ClawloopError(f"{base}: tokenizer: {str(e).splitlines()[0]}") from None
        raise
    except ImportError as e:
        env_cls.close_all()
        if params.use_vllm and "vllm" in str(e).lower():
            raise ClawloopError(f"grpo.use_vllm: vLLM is not installed here ({str(e).splitlines()[0]}); "
                                "install the gpu extra or set grpo.use_vllm=false") from None
        raise
    return trainer, env_cls


def run_grpo(base: Path, tasks: Sequence[Task], params: GRPOParams, stage_dir: Path, dest: Path, *,
             backend: str = "bwrap", sandbox_config: SandboxConfig | None = None,
             harness_config: HarnessConfig | None = None,
             logs_dir: Path | None = None, meta: dict[str, Any] | None = None,
             callbacks: Sequence[Callable[..., Any]] | None = None) -> dict[str, Any]:
    """GRPO from `base` on `tasks` (resuming from `stage_dir`), saved into `dest`; returns the meta."""
    start = time.time()
    from clawloop.phases.train.progress import training_run

    with training_run("grpo", stage_dir, logs_dir, callbacks or ()) as (cbs, resume):
        trainer, env_cls = build_trainer(base, tasks, params, stage_dir, backend=backend,
                                         sandbox_config=sandbox_config, harness_config=harness_config,
                                         callbacks=cbs)
        precision = precision_record(params, bool(trainer.args.bf16), "grpo")
        try:
            result = trainer.train(resume_from_checkpoint=resume)
        finally:
            env_cls.close_all()
    metrics = final_metrics(trainer, result)
    total = sum(v for k, v in env_cls.stats.items() if k != "scored_error")
    metrics.update({f"rollouts_{k}": float(v) for k, v in env_cls.stats.items()})
    metrics["rollouts"] = float(total)
    meta = {
        **(meta or {}),
        "method": "grpo",
        "base": str(base),
        "steps": trainer.state.global_step,
        "tasks": len(tasks),
        "metrics": metrics,
        "masked_rollouts": (env_cls.stats.get("error", 0) - env_cls.stats.get("scored_error", 0)
                            + env_cls.stats.get("skipped", 0)),
        "wall_time_s": round(time.time() - start, 3),
        "resumed_from": resume,
        "params": params.model_dump(mode="json"),
        "precision": precision,
    }
    save_final(trainer, trainer.processing_class, dest, meta, base=base)
    return meta
