"""Training progress as `clawloop train` and the train stage show it: step of max_steps, loss,
tokens/s and ETA, through clawloop.core.progress (a bar on a terminal, a line every few seconds in a
log). transformers' own output is one loss dict per `logging_steps`, which on a CPU can be
minutes apart."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from clawloop.artifacts.checkpoint import dvclive_callback, last_checkpoint
from clawloop.core.progress import Progress


class TrainProgress(TrainerCallback):  # type: ignore[misc]
    """Feeds a Progress from the trainer's state: steps, loss (or GRPO's reward), tokens.

    Tokens come from `state.num_input_tokens_seen` (SFT counts non-padding tokens with
    `include_num_input_tokens_seen`; TRL's GRPO counts prompt + completion tokens)."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.tokens = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.bar.set_total(state.max_steps or None)
        self.bar.start_at(state.global_step)  # a resumed run's earlier steps stay out of the ETA
        self.tokens = int(state.num_input_tokens_seen or 0)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        seen = int(state.num_input_tokens_seen or 0)
        self.bar.add_tokens(seen - self.tokens)
        self.tokens = seen
        self.bar.set_done(state.global_step)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        figures = {k: v for k, v in (logs or {}).items() if k in ("loss", "reward") and isinstance(v, int | float)}
        self.bar.set(**{k: round(float(v), 4) for k, v in figures.items()})


@contextlib.contextmanager
def train_progress(label: str) -> Iterator[TrainProgress]:
    """A TrainProgress whose display opens now (model loading shows as time elapsed) and closes
    when the block ends, also on an error; shown by the main process only."""
    with Progress(label, unit="steps", enabled=_main()) as bar:
        yield TrainProgress(bar)


@contextlib.contextmanager
def training_run(name: str, stage_dir: Path, logs_dir: Path | None,
                 callbacks: Sequence[Any] = ()) -> Iterator[tuple[list[Any], str | None]]:
    """What SFT and GRPO set up alike around one trainer run: its callbacks (the caller's, the
    progress shown as `train NAME`, DVCLive into `logs_dir`) and the checkpoint under `stage_dir`
    to resume from (None: a fresh start)."""
    resume = last_checkpoint(stage_dir)
    # the main process's only: the callback logs on it alone, and a Live made on another would clean the dir
    cb = dvclive_callback(logs_dir, resume=resume is not None) if _main() else None
    with train_progress(f"train {name}") as shown:
        yield [*callbacks, shown, *([cb] if cb else [])], resume


def _main() -> bool:
    """Whether this is the main process (rank 0) under accelerate / torchrun, or not distributed."""
    return int(os.environ.get("RANK", "0")) == 0
