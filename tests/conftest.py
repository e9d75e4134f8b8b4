"""Shared fixtures. Tests never need a GPU and never touch the network."""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Under CPU contention OpenMP threads spin-waiting for a busy core made torch 4–6× slower
# (measured during SFT on this 2-core box); passive waiting costs nothing when the box is idle.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# A repo that `dvc init` makes in a test has analytics on: each dvc command left a report file in
# /tmp for a daemon that cannot reach the network (14 files per suite run).
os.environ.setdefault("DVC_NO_ANALYTICS", "1")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bootstrap's tiny model, built once per session (shared by the training tests)."""
    from clawloop.bootstrap.scratch import bootstrap

    d = tmp_path_factory.getbasetemp() / "training-tiny-model"
    if not (d / "model_meta.json").exists():
        bootstrap(d, size="tiny", seed=0, corpus_pairs=2000)
    return d


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A 640-token tokenizer trained on the bootstrap corpus (the engine and backend tests' own)."""
    from clawloop.bootstrap.corpus import corpus
    from clawloop.bootstrap.scratch import build_tokenizer, train_tokenizer

    return build_tokenizer(train_tokenizer("split", 640, texts=corpus(0, n_pairs=500, n_chats=100)))


@pytest.fixture(scope="module")
def qwen3(tokenizer: Any) -> Any:
    """A tiny untrained Qwen3 over `tokenizer` (seed 0), for engine tests that compare paths."""
    from clawloop.bootstrap.scratch import build_model

    return build_model("tiny", tokenizer, seed=0, max_positions=4096)


@pytest.fixture()
def one_torch_thread() -> Iterator[None]:
    """One torch thread: on a CPU shared with other jobs, 2 threads ran 4-6x slower (see
    TrainParams.threads); alone on 2 cores it costs little."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def backend() -> str:
    """The bwrap sandbox backend, or a skip saying why it cannot run here (modules that test
    several backends define their own `backend`)."""
    from clawloop.core.tasks.environment import open_sandbox

    try:
        with open_sandbox("bwrap") as sb:
            if sb.exec("true", timeout=30).exit_code == 0:
                return "bwrap"
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"bwrap sandbox unusable here: {e}")
    pytest.skip("bwrap sandbox unusable here")
