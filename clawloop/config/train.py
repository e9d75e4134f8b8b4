"""Training knobs: one pydantic record with help text per field and two sets of defaults.

`TrainParams.for_profile("cpu")` is for the tiny from-scratch model on a laptop-class CPU,
`TrainParams.for_profile("gpu")` for real checkpoints (Qwen3 4B-32B) on GPUs. A params.yaml
`train:` section overrides any field; unknown keys are errors naming the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clawloop.errors import ClawloopError, validated

Profile = Literal["cpu", "gpu"]
Precision = Literal["auto", "float32", "bfloat16"]

MOVED_TO_SANDBOX: dict[str, str] = {"sandbox_backend": "sandbox.backend", "reference_workers": "sandbox.jobs"}
"""Keys of `data` that moved to params.yaml's `sandbox` section (`train(backend=, jobs=)`,
`clawloop train --backend/--jobs`): refused with a hint rather than silently ignored."""


def moved_key(options: dict[str, Any] | None) -> str | None:
    """`data.KEY: replaced by SECTION.KEY` when `options` (a train section) holds a moved key, else None."""
    data = (options or {}).get("data")
    for old, new in MOVED_TO_SANDBOX.items():
        if isinstance(data, dict) and old in data:
            return f"data.{old}: replaced by {new}"
    return None


class _Params(BaseModel):
    # Attribute docstrings become the fields' descriptions: `clawloop train --help-params` prints them.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)


class DataParams(_Params):
    """Which trajectories train the model."""

    self_fraction: float | None = Field(None, ge=0.0, le=1.0)
    """Share of the policy's own successful rollouts in the SFT set; the rest are reference trajectories.
    None keeps every trajectory (natural mix); otherwise the largest subset with this share is taken,
    without repeating any example."""
    max_per_task: int = Field(4, gt=0)
    """Most self-generated trajectories kept per task (shortest first, after dedup)."""
    self_order: Literal["shortest", "process"] = "shortest"
    """Which own passes the per-task cap keeps first: the shortest, or those with the highest process
    score (a look before the first change, a look after the last:
    clawloop.phases.train.data.process_score), shortest among equals."""
    self_min_process: int = Field(0, ge=0, le=2)
    """Own passes scoring lower are not trained on (2: only those that inspect before acting and check
    before submitting)."""
    reference_shape: Literal["plain", "process"] = "plain"
    """How reference solutions are replayed: plain (the steps, then submit) or process (a look at the
    workspace first and a check of what the steps wrote before submitting, each with a one-line
    thought: inspect -> act -> check -> submit; solutions too long for max_turns stay plain)."""
    reference_mistakes: float = Field(0.0, ge=0.0, le=1.0)
    """Share of process-shaped replays of tasks whose shell starts away from their files that first run
    their first step where the shell starts (its real 'No such file' error, no loss on that turn) and
    then fix it with a `cd`: the recovery InterCode's agent lacks. Only steps that fail without
    changing anything take it (clawloop.phases.train.reference.relative_mistake)."""
    reference_previews: Literal["keep", "drop"] = "keep"
    """Solution steps that only preview a later step (`find d -empty` before `find d -empty -delete`):
    kept, or dropped from process replays (clawloop.phases.train.reference.drop_previews). After
    training on them the policy listed and submitted on delete tasks instead of deleting."""
    reference_thoughts: Literal["none", "restate"] = "none"
    """The thought before a process replay's first act: none, or the instruction restated on one line
    (clawloop.phases.train.reference.restatement), so that the command is written right after what the
    task asks; the trained policy swapped InterCode's requests for the nearest pool template."""
    reference_checks: Literal["look", "quiet", "none"] = "look"
    """The check a process replay ends on: look (the head of the written file, the listing of the moved
    one), quiet (a test that prints nothing when the act worked: `test -s out`, `test -e new`; no
    check where nothing is named to test), or none (look -> act -> submit). InterCode grades the last
    command's output, empty after a change (clawloop.phases.train.reference.check_command); at
    iteration 1 quiet and none gave InterCode 3 and 5 of 50 against look's 7
    (docs/experiments/2026-12-06-quiet-checks.md)."""
    replay: float = Field(0.0, ge=0.0)
    """Conversations the policy was trained on before (its checkpoint's sft_conversations.jsonl, written by
    every SFT run) trained on again, as a share of this run's new ones, drawn with `seed`: earlier
    iterations' data replayed so a later pool (levels 3-4) does not overwrite what the first taught.
    0 = none; a base without the file replays nothing."""
    seed: int = 0
    """Seed of the sampling when mixing trajectories."""


class LoraParams(_Params):
    """Low-rank adapters (peft); merged into the weights when saving."""

    r: int = Field(16, gt=0)
    """Adapter rank."""
    alpha: int = Field(32, gt=0)
    """LoRA alpha (scaling = alpha / r)."""
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    """Dropout on the adapter input."""
    target_modules: str | list[str] = "all-linear"
    """Modules that get adapters; 'all-linear' = every linear layer but the head."""


class TrainerParams(_Params):
    """What SFT and GRPO set alike (the TrainingArguments of clawloop.phases.train.sft.shared_args);
    the fields whose defaults differ between the two are declared in each."""

    gradient_accumulation_steps: int = Field(1, gt=0)
    """Micro-batches per optimizer step."""
    gradient_checkpointing: bool = False
    """Recompute activations in backward: less memory, slower steps."""
    precision: Precision = "auto"
    """Arithmetic of training: bfloat16 = bf16 autocast (matmuls in bf16, the weights, gradients and
    optimizer state stay float32: master weights), float32 = float32 throughout; auto = bfloat16 on a
    CPU with native bf16 (avx512_bf16 / amx_bf16, clawloop.config.cpu.native_bf16) or a CUDA GPU with
    bf16, float32 elsewhere (emulated bf16 ran 28x slower than float32 on an AVX2 box). On the
    avx512_bf16 box (2026-12-07, the default SFT, box loaded): bf16 1.12x float32's speed a step
    (the trained layers alone ~1.7x), and its loss curve left float32's after the first update
    (final step 34% higher; float32 with another thread count stayed on float32's curve):
    benchmarks/perf/train.py --sft, benchmarks/perf/README.md. auto keeps what the loop's recorded
    results ran with (bf16 on that box) until a paired held-out comparison says otherwise."""
    save_total_limit: int = Field(2, gt=0)
    """Checkpoints kept in OUT.tmp while training."""
    seed: int = 0
    """Seed of initialization, data order and (GRPO) rollout sampling."""
    lora: LoraParams | None = None
    """Train LoRA adapters instead of the weights (never the head); with trainable_layers, adapters on
    the top N layers only."""
    trainable_layers: int | None = Field(None, gt=0)
    """Train only the top N transformer layers and the final norm (with lora: their adapters); the
    embeddings (and a tied head) and lower layers stay frozen, so the backward pass stops at layer N
    from the top. None = all weights."""
    iteration_decay: float = Field(1.0, gt=0.0, le=1.0)
    """The loop's iteration i trains at learning_rate * iteration_decay ** (i - 1) (TrainParams.at_iteration):
    later iterations move the promoted policy less. 1 = the same rate every iteration."""
    train_head: bool = True
    """With trainable_layers: an untied output head trains too. false: the head stays the base's
    (Qwen2.5-Coder-0.5B's untied head is 136M of the 226M weights its top 6 layers and head hold, and
    it re-weights every token of the vocabulary from narrow data)."""

    @model_validator(mode="before")
    @classmethod
    def _bf16_renamed(cls, data: Any) -> Any:
        # the former `bf16: true | false | null` would otherwise fail as an unknown key without a hint
        if isinstance(data, dict) and "bf16" in data:
            raise ValueError("bf16: replaced by precision (auto | float32 | bfloat16; bf16 null = auto)")
        return data

    @model_validator(mode="after")
    def _head_needs_layers(self) -> TrainerParams:
        if not self.train_head and self.trainable_layers is None and self.lora is None:
            raise ValueError("train_head: false needs trainable_layers or lora: it freezes the head of a "
                             "top-layers run (LoRA never trains the head)")
        return self


class SFTParams(TrainerParams):
    """Supervised fine-tuning on successful trajectories (assistant-only loss)."""

    learning_rate: float = Field(1e-3, gt=0)
    """Peak learning rate."""
    num_train_epochs: float = Field(3.0, gt=0)
    """Passes over the data (ignored when max_steps > 0)."""
    max_steps: int = -1
    """Optimizer steps; -1 = use num_train_epochs."""
    per_device_train_batch_size: int = Field(16, gt=0)
    """Conversations per device per micro-batch."""
    max_length: int = Field(1024, gt=0)
    """Tokens per conversation; longer ones are cut at the end."""
    packing: bool = False
    """Pack several conversations per row (slower per token on CPU: benchmarks/perf/README.md)."""
    warmup_ratio: float = Field(0.05, ge=0.0, lt=1.0)
    """Share of steps with linear warm-up."""
    lr_scheduler_type: str = "cosine"
    """transformers scheduler name."""
    weight_decay: float = Field(0.0, ge=0.0)
    """AdamW weight decay."""
    logging_steps: int = Field(10, gt=0)
    """Steps between metric logs."""
    save_steps: int = Field(200, gt=0)
    """Steps between checkpoints (for resuming)."""
    frozen_trunk: Literal["auto", "off"] = "auto"
    """With trainable_layers (no packing, on a CPU): compute the frozen layers' output once per
    conversation and train the top layers from it, scoring the head only where the loss is (same loss
    and gradients; clawloop/phases/train/frozen_trunk.py, benchmarks/perf/sft_step.py). off: TRL's
    path, every layer forward at every step."""
    interpolate: float = Field(1.0, gt=0, le=1)
    """Weight-space ensembling (WiSE-FT, Wortsman et al. 2022): after training, each trained weight is
    put at start + interpolate * (trained - start), where start is the policy the stage began from
    (the previous iteration's). 1 = the trained weights; 0.5 = half way back, which in the paper keeps
    most of the fine-tuning gain and much of what the start did on other distributions; on the CPU
    default's iteration 1, 0.5 kept 3 of 18 synth-heldout tasks gained and won back 1 of 6 InterCode
    tasks lost (docs/experiments/2026-12-05-the-default-timed-end-to-end.md)."""

    @model_validator(mode="after")
    def _interpolate_needs_weights(self) -> SFTParams:
        if self.interpolate < 1 and self.lora is not None:
            raise ValueError("interpolate < 1 needs trained weights, not lora adapters (their product does not "
                             "interpolate linearly)")
        return self


class GRPOParams(TrainerParams):
    """Multi-turn GRPO with the hidden verifier's reward."""

    learning_rate: float = Field(1e-6, gt=0)
    """Peak learning rate."""
    beta: float = Field(0.0, ge=0.0)
    """KL weight against the base model (0 = no reference model)."""
    num_generations: int = Field(4, gt=1)
    """Rollouts per task in a group (G)."""
    per_device_train_batch_size: int = Field(4, gt=0)
    """Rollouts per device per micro-batch; the generation batch must divide by G."""
    max_steps: int = Field(50, gt=0)
    """Optimizer steps."""
    max_completion_length: int = Field(512, gt=0)
    """Tokens of the whole multi-turn completion (replies and tool results)."""
    max_turns: int = Field(8, gt=0)
    """Most tool-calling rounds per rollout."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of rollouts."""
    loss_type: str = "dapo"
    """TRL GRPO loss: dapo | grpo | dr_grpo | bnpo | ..."""
    use_vllm: bool = False
    """Generate with vLLM (GPU only)."""
    vllm_mode: Literal["colocate", "server"] = "colocate"
    """vLLM in-process or a server."""
    logging_steps: int = Field(1, gt=0)
    """Steps between metric logs."""
    save_steps: int = Field(25, gt=0)
    """Steps between checkpoints (for resuming)."""


class ReflectionParams(_Params):
    """The reflector (train.playbook.reflector: model): the policy reads its own held-in episodes
    and proposes playbook edits (clawloop.phases.train.reflect)."""

    groups: int = Field(4, gt=0)
    """Most (failure mode, skill) groups shown, most frequent first."""
    failed_per_group: int = Field(2, gt=0)
    """Failed episodes shown per group."""
    passed: int = Field(2, ge=0)
    """Passed episodes shown (the groups' skills first)."""
    episode_chars: int = Field(700, gt=0)
    """Characters of one condensed episode in the prompt."""
    max_new_tokens: int = Field(384, gt=0)
    """Most tokens of the reflector's reply."""
    max_edits: int = Field(6, gt=0)
    """Most edits read from one reply (the rest dropped)."""
    max_tip_chars: int = Field(220, gt=0)
    """A longer tip line is dropped."""
    template: str = "reflect.j2"
    """The prompt (clawloop/core/agent/templates or an absolute path)."""


class HarnessSearchParams(_Params):
    """Harness edits tried on a held-in development split (clawloop.phases.train.harness_search)."""

    search: bool = True
    """Propose and try harness edits (false: the harness stays as it is)."""
    dev_tasks: int = Field(16, gt=0)
    """Tasks of the development split: a fixed subset of the iteration's validated pool (never a held-out
    suite)."""
    min_dev_tasks: int = Field(4, gt=0)
    """With fewer validated tasks no edit is tried."""
    max_candidates: int = Field(2, ge=0)
    """Most edits tried per iteration (each costs one rollout of the dev split)."""
    min_net_gain: int = Field(1, gt=0)
    """An edit is kept only when it gains at least this many more dev tasks than it loses (paired, same
    tasks)."""
    alpha: float = Field(0.5, gt=0, le=1)
    """... and the exact one-sided sign test that it is better has p <= alpha (0.5: any net gain of 1
    over no loss; lower is stricter)."""
    min_observation_chars: int = Field(200, ge=100)
    """Shortest observation an edit may set."""
    max_observation_chars: int = Field(8000, le=16_000)
    """Longest observation an edit may set."""
    format_error_share: float = Field(0.25, ge=0, le=1)
    """Share of episodes with format errors above which the other format-hint and tool-description
    variants are tried."""
    truncated_share: float = Field(0.1, ge=0, le=1)
    """Share of commands whose output was cut above which a longer observation is tried."""
    mode_share: float = Field(0.25, ge=0, le=1)
    """Share of episodes of a failure mode (max_turns, timeout, wrong_result, premature_submit) above
    which its edit is tried."""


class PlaybookParams(_Params):
    """The playbook methods (train.method playbook | sft+playbook): what the playbook may hold."""

    reflector: Literal["model", "rules"] = "model"
    """Who proposes the tips: the policy itself, reading its own held-in episodes (model; the rule tips
    are the fallback when it proposes nothing valid) or playbook_tips.yaml (rules)."""
    reflection: ReflectionParams = Field(default_factory=ReflectionParams)
    harness: HarnessSearchParams = Field(default_factory=HarnessSearchParams)

    token_budget: int = Field(384, gt=0)
    """Most tokens of the rendered playbook block, counted with the policy's tokenizer: a small model
    pays for each at every turn."""
    max_tips: int = Field(6, ge=0)
    """Most instruction lines (per skill and per failure mode)."""
    max_mode_tips: int = Field(3, ge=0)
    """Most of those answering failure modes (the most frequent); the rest go to the weakest skills."""
    max_examples: int = Field(2, ge=0)
    """Most worked examples (the agent's own successful episodes)."""
    examples_per_skill: int = Field(1, gt=0)
    """Most worked examples of one skill."""
    max_example_steps: int = Field(4, gt=0)
    """Episodes with more commands are not used as examples."""
    example_instruction_chars: int = Field(300, gt=0)
    """An example's task text is cut to this many characters."""
    example_output_chars: int = Field(0, ge=0)
    """Characters of each command's output shown in an example (0: exit code only)."""
    weak_below: float = Field(0.5, ge=0.0, le=1.0)
    """Skills whose pass rate in the report is below this get a tip."""
    prune: bool = True
    """Drop entries whose skill's pass rate (or failure mode's share) did not improve since they were
    last judged; a pruned entry is never re-added."""


class TrainParams(_Params):
    """Every knob of the training stage."""

    profile: Profile = "cpu"
    """Which defaults the other fields start from: cpu | gpu."""
    data: DataParams = Field(default_factory=DataParams)
    sft: SFTParams = Field(default_factory=SFTParams)
    grpo: GRPOParams = Field(default_factory=GRPOParams)
    playbook: PlaybookParams = Field(default_factory=PlaybookParams)
    threads: int | None = Field(None, gt=0)
    """torch CPU threads (None: torch's default, one per core). On a CPU shared with other jobs, more
    threads can be slower than one (OpenMP spin-waiting, benchmarks/perf/README.md);
    OMP_WAIT_POLICY=PASSIVE in the environment fixes it too."""
    dvclive: bool = True
    """Log per-step metrics with DVCLive into the --logs dir (train_meta.json always)."""

    @model_validator(mode="before")
    @classmethod
    def _profile_defaults_first(cls, data: Any) -> Any:
        """Fields not given start from the profile's defaults (nested sections merge), so a
        params.yaml `train:` section validates as a TrainParams field of the whole file."""
        if not isinstance(data, dict):
            return data
        if (moved := moved_key(data)) is not None:
            raise ValueError(moved)
        profile = data.get("profile", "cpu")
        return merge(_profile_defaults(profile), data) if profile in ("cpu", "gpu") else data

    def at_iteration(self, iteration: int) -> TrainParams:
        """These params for the loop's iteration `iteration` (1-based): each trainer's learning rate
        times its iteration_decay ** (iteration - 1)."""
        steps = max(iteration - 1, 0)
        return self.model_copy(update={
            name: trainer.model_copy(update={"learning_rate": trainer.learning_rate * trainer.iteration_decay ** steps})
            for name, trainer in (("sft", self.sft), ("grpo", self.grpo))})

    @classmethod
    def for_profile(cls, profile: Profile = "cpu") -> TrainParams:
        """The defaults of a profile (see the module docstring)."""
        return cls.model_validate(_profile_defaults(profile))

    @classmethod
    def from_mapping(cls, obj: dict[str, Any] | None, where: str = "params") -> TrainParams:
        """Profile defaults overridden by `obj` (nested dicts merge); errors name `where` and the field."""
        obj = dict(obj or {})
        if (moved := moved_key(obj)) is not None:
            raise ClawloopError(f"{where}: {moved} (clawloop train: --backend / --jobs)")
        profile = obj.get("profile", "cpu")
        if profile not in ("cpu", "gpu"):
            raise ClawloopError(f"{where}: profile: expected 'cpu' or 'gpu', got {profile!r}")
        return validated(cls, obj, where)

    @classmethod
    def from_yaml(cls, path: str | Path, section: str | None = "train",
                  overrides: dict[str, Any] | None = None) -> TrainParams:
        """Read a params.yaml (optionally one dotted section, e.g. "train" or "loop.train"),
        with `overrides` merged on top."""
        data = load_section(path, section)
        return cls.from_mapping(merge(data, overrides or {}), where=f"{path}: {section}" if section else str(path))


def load_section(path: str | Path, section: str | None) -> dict[str, Any]:
    """The mapping at dotted `section` of a YAML file (the whole file when None)."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ClawloopError(f"{path}: file not found") from None
    except yaml.YAMLError as e:
        raise ClawloopError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    for key in (section.split(".") if section else []):
        if not isinstance(data, dict) or key not in data:
            raise ClawloopError(f"{path}: {section}: section not found")
        data = data[key]
    if not isinstance(data, dict):
        raise ClawloopError(f"{path}: {section}: expected a mapping" if section else f"{path}: expected a mapping")
    return data


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _profile_defaults(profile: Profile) -> dict[str, Any]:
    if profile == "cpu":
        # From-scratch tiny model: high lr (2e-5 is far too low), no packing, no checkpointing (both
        # slower on CPU: benchmarks/perf/README.md, Training).
        return {"profile": "cpu"}
    # Real checkpoints: small lr, bf16, checkpointing for memory, GRPO with a KL anchor.
    return {
        "profile": "gpu",
        "sft": {
            "learning_rate": 1e-5, "num_train_epochs": 2.0, "per_device_train_batch_size": 4,
            "gradient_accumulation_steps": 8, "max_length": 8192, "gradient_checkpointing": True,
            "warmup_ratio": 0.03, "weight_decay": 0.01, "save_steps": 100,
        },
        "grpo": {
            "learning_rate": 1e-6, "beta": 0.01, "num_generations": 8, "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 4, "max_steps": 200, "max_completion_length": 4096,
            "max_turns": 16, "use_vllm": True, "gradient_checkpointing": True, "save_steps": 25,
        },
    }


def resolve_bf16(precision: Precision) -> bool:
    """Whether training runs under bf16 autocast: bfloat16 yes, float32 no; auto: a CUDA GPU with
    bf16, else a CPU with native bf16 (clawloop.config.cpu.native_bf16)."""
    if precision != "auto":
        return precision == "bfloat16"
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    from clawloop.config.cpu import native_bf16

    return native_bf16()


def field_help(params: BaseModel, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted name, value, help) of every field of `params`, for `clawloop train --help-params`."""
    rows: list[tuple[str, str, str]] = []
    for name, f in type(params).model_fields.items():
        value = getattr(params, name)
        if isinstance(value, BaseModel):
            rows += field_help(value, f"{prefix}{name}.")
        else:
            rows.append((f"{prefix}{name}", repr(value), f.description or ""))
    return rows
