"""Replay of earlier iterations' training data and the per-iteration learning-rate decay (#76): each
SFT run leaves its conversations in its checkpoint, and the next run trains on a share of them again."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from test_training_run import make_task  # tests/ is on sys.path (rootdir conftest, no package)

from clawloop.config.params import Params
from clawloop.config.train import TrainParams
from clawloop.core.tasks.pool import write_pool
from clawloop.errors import ClawloopError
from clawloop.phases.train.data import Conversation
from clawloop.phases.train.jobs import TrainJob, train
from clawloop.phases.train.replay import CONVERSATIONS, read_conversations, replay, write_conversations


def conv(i: int) -> Conversation:
    return Conversation(f"t{i}", [{"role": "user", "content": f"do {i}"},
                                  {"role": "assistant", "content": f"done {i}"}], "reference")


def test_replay_adds_the_share_of_earlier_conversations_none_equal_to_a_new_one() -> None:
    new, previous = [conv(i) for i in range(10)], [conv(i) for i in range(5, 30)]
    mixed = replay(previous, new, 0.5, seed=3)
    assert len(mixed) == 15 and set(c.key for c in new) <= set(c.key for c in mixed)
    assert len({c.key for c in mixed}) == 15  # the 5 shared conversations are never drawn twice
    assert mixed == replay(previous, new, 0.5, seed=3) and mixed != replay(previous, new, 0.5, seed=4)
    assert replay([], new, 0.5) == new and len(replay(previous[-2:], new, 0.5)) == 12  # all there are


def test_conversations_round_trip_and_a_bad_line_names_file_line_and_field(tmp_path: Path) -> None:
    assert read_conversations(tmp_path) == []  # a base: nothing to replay
    write_conversations(tmp_path, [conv(1), conv(2)])
    back = read_conversations(tmp_path)
    assert [c.key for c in back] == [conv(1).key, conv(2).key] and all(c.meta["replayed"] for c in back)
    path = tmp_path / CONVERSATIONS
    path.write_bytes(path.read_bytes() + orjson.dumps({"task_id": "x", "messages": [{"role": "user"}]}) + b"\n")
    with pytest.raises(ClawloopError, match=rf"{CONVERSATIONS}:3: messages: no assistant turn"):
        read_conversations(tmp_path)
    path.write_bytes(b'{"messages": []}\n')
    with pytest.raises(ClawloopError, match=r":1: task_id"):
        read_conversations(tmp_path)


def test_the_learning_rate_decays_per_iteration() -> None:
    train_params = Params().train.options()
    rates = [train_params.at_iteration(i).sft.learning_rate for i in (1, 2, 3)]
    assert rates == pytest.approx([2e-5, 1e-5, 5e-6])
    assert TrainParams().at_iteration(3).sft.learning_rate == TrainParams().sft.learning_rate  # library: no decay


def test_a_trained_checkpoint_carries_its_data_and_the_next_run_replays_it(tiny_model: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "pool1.jsonl", tmp_path / "pool2.jsonl"
    write_pool(first, [make_task(f"a{i}.txt", f"v{i}") for i in range(4)])
    write_pool(second, [make_task(f"b{i}.txt", f"w{i}") for i in range(4)])
    params = TrainParams.from_mapping({"sft": {"max_steps": 1, "per_device_train_batch_size": 2},
                                       "data": {"replay": 0.5}, "dvclive": False})
    train(TrainJob("sft", tiny_model, first, tmp_path / "it1"), params)
    kept = read_conversations(tmp_path / "it1")
    assert len(kept) == 4 and all(c.source == "reference" for c in kept)  # the base had nothing to replay
    train(TrainJob("sft", tmp_path / "it1", second, tmp_path / "it2"), params)
    meta = orjson.loads((tmp_path / "it2" / "train_meta.json").read_bytes())
    assert meta["replay"] == {"share": 0.5, "available": 4, "replayed": 2}
    trained = read_conversations(tmp_path / "it2")
    assert len(trained) == 6 and len({c.key for c in trained} & {c.key for c in kept}) == 2
