"""params.yaml validation: every profile parses; a wrong type or unknown key names the key."""

from pathlib import Path

import pytest
import yaml

from clawloop.config.params import load_params
from clawloop.errors import ClawloopError

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", ["params.yaml", *sorted(f"profiles/{p.name}" for p in (ROOT / "profiles").glob("*.yaml"))])
def test_profiles_parse(path: str) -> None:
    p = load_params(ROOT / path)
    assert p.loop.last == max(p.loop.iterations)


def _write(tmp_path: Path, edit) -> Path:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    edit(raw)
    out = tmp_path / "params.yaml"
    out.write_text(yaml.safe_dump(raw))
    return out


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda r: r["rollout"].update(batch="many"), "rollout.batch"),
    (lambda r: r["synthesis"].update(tasks_per_iteration=-3), "synthesis.tasks_per_iteration"),
    (lambda r: r["eval"].update(sampels=2), "eval.sampels: unknown key"),
    (lambda r: r.update(trian={}), "trian: unknown key"),
    (lambda r: r["train"]["sft"].update(learning_rat=1.0), "train.sft.learning_rat: unknown key"),
    (lambda r: r["train"].update(profile="tpu"), "train.profile"),
    (lambda r: r["transfer"].update(train={"grpo": {"beta": -1}}), "transfer.train.grpo.beta"),
    (lambda r: r["synthesis"].update(hindsight={"max_chnages": 3}), "synthesis.hindsight.max_chnages: unknown key"),
    (lambda r: r["synthesis"].update(proposer={"batch_size": 0}), "synthesis.proposer.batch_size"),
    (lambda r: r["model"].update(base="scratch-tiny", pretrain={"stpes": 1}), "model.bootstrap.pretrain.stpes"),
    (lambda r: r["synthesis"]["curriculum"].update(floor_share=2), "synthesis.curriculum.floor_share"),
    (lambda r: r["diagnosis"]["options"].update(bogus=1), "diagnosis.options.bogus: unknown key"),
    (lambda r: r["rollout"].update(openai={"max_concurency": 4}), "rollout.openai.max_concurency"),
    (lambda r: r["rollout"].update(vllm={"kv_cache_gib": 0}), "rollout.vllm.kv_cache_gib"),
    (lambda r: r["loop"].update(last=7), "loop.last"),
    (lambda r: r["loop"]["iterations"]["2"].update(prev=5), "loop.iterations.2.prev"),
    (lambda r: r["synthesis"]["routines"].update(teacher=1.0), "routine"),
    (lambda r: r["model"].update(base="gpt-7"), "model.base: unknown base 'gpt-7'"),
    (lambda r: r["model"].update(init="tiny"), "model.init: replaced by model.base"),
    (lambda r: r["rollout"].update(speculate=8), "rollout.speculate: moved to rollout.engine.speculate"),
    (lambda r: r["rollout"].update(threads=1), "rollout.threads: moved to rollout.engine.threads"),
    (lambda r: r["rollout"].update(engine="fast"), "rollout.engine: now the section of the engine's knobs; "
                                                   "the forward pass moved to rollout.engine.forward"),
    (lambda r: r["rollout"]["engine"].update(speculat=8), "rollout.engine.speculat: unknown key"),
    (lambda r: r["rollout"]["engine"].update(forward="gpu"), "rollout.engine.forward"),
    (lambda r: r["transfer"].update(base="scratch-huge"), "transfer.base: unknown base 'scratch-huge'"),
])
def test_bad_params_name_the_key(tmp_path: Path, edit, needle: str) -> None:
    with pytest.raises(ClawloopError) as e:
        load_params(_write(tmp_path, edit))
    assert needle in str(e.value)
    assert str(tmp_path / "params.yaml") in str(e.value)


def test_sections_are_typed_with_profile_defaults(tmp_path: Path) -> None:
    """train / transfer.train are the training library's TrainParams (profile defaults under the
    keys given), the other sections their phases' own config classes."""
    from clawloop.config.diagnosis import DiagnosisParams
    from clawloop.config.train import TrainParams

    def edit(r: dict) -> None:
        r["train"] = {"method": "sft+grpo", "profile": "gpu", "sft": {"max_steps": 7}}
        r["diagnosis"] = {"options": {"top_commands": 3}}

    p = load_params(_write(tmp_path, edit))
    opts = p.train.options()
    assert type(opts) is TrainParams and p.train.method == "sft+grpo"
    assert opts.sft.max_steps == 7 and opts.sft.learning_rate == 1e-5 and opts.grpo.use_vllm  # gpu defaults
    assert opts == TrainParams.from_mapping({"profile": "gpu", "sft": {"max_steps": 7}})
    assert type(p.transfer.train) is TrainParams
    assert isinstance(p.diagnosis.options, DiagnosisParams) and p.diagnosis.options.top_commands == 3


def test_integer_iteration_ids_are_refused(tmp_path: Path) -> None:
    text = (ROOT / "params.yaml").read_text().replace('"1": {prev', '1: {prev')
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ClawloopError, match="quote the iteration ids"):
        load_params(tmp_path / "params.yaml")


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ClawloopError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    with pytest.raises(ClawloopError, match="not valid YAML"):
        load_params(tmp_path / "bad.yaml")


def test_rollout_params_reach_the_harness_and_policy(tmp_path: Path) -> None:
    """rollout.max_format_errors and rollout.engine.threads are not just parsed: the loop's harness and
    policy settings carry them; the engine's forward pass is auto unless set."""
    from clawloop.core.rollout_settings import rollout_settings

    out = _write(tmp_path, lambda r: (r["rollout"].update(max_format_errors=2), r["rollout"].update(engine={"threads": 1})))
    context = rollout_settings(load_params(out))
    assert context.harness.max_format_errors == 2
    assert load_params(out).rollout.engine.threads == 1
    assert context.policy.hf.engine.threads == context.policy.llamacpp.threads == 1
    assert context.policy.hf.engine.forward == "auto" and context.policy.hf.engine.speculate == 8  # the measured default
    assert rollout_settings(load_params(ROOT / "profiles" / "smoke.yaml")).harness.max_format_errors == 3
    hinted = _write(tmp_path, lambda r: r["rollout"].update(format_hint="json_fence", repeat_note=False,
                                                            repeat_resample=0.7))
    harness = rollout_settings(load_params(hinted)).harness
    assert (harness.format_hint, harness.repeat_note, harness.repeat_resample) == ("json_fence", False, 0.7)


def test_rollout_format_hints_are_the_harness_variants() -> None:
    """params.py spells the variants instead of importing them (dvc deps): they must stay the same."""
    from typing import get_args

    from clawloop.config.params import RolloutParams
    from clawloop.core.agent.playbook import FORMAT_HINTS, FormatHint

    assert get_args(RolloutParams.model_fields["format_hint"].annotation) == get_args(FormatHint) == tuple(FORMAT_HINTS)


def test_one_describer_for_every_pydantic_error() -> None:
    """params.yaml, playbooks and pools name the file and field with the same wording."""
    from clawloop.core.agent.playbook import parse_playbook
    from clawloop.core.tasks.pool import parse_task

    with pytest.raises(ClawloopError, match=r"^pb.json: token_budget: Field required$"):
        parse_playbook({}, "pb.json")
    with pytest.raises(ClawloopError, match=r"^pb.json: bogus: unknown key$"):
        parse_playbook({"token_budget": 10, "bogus": 1}, "pb.json")
    with pytest.raises(ClawloopError, match=r"^pool.jsonl:3: instruction: "):
        parse_task({"instruction": 5}, "pool.jsonl:3")


def test_one_answer_to_which_model_is_the_default() -> None:
    """params.yaml and the schema name the same default base (a params file without a model section
    gets the loop's model, not the former default's)."""
    from clawloop.config.params import ModelParams

    assert load_params(ROOT / "params.yaml").model.base == ModelParams().base == "qwen2.5-coder-0.5b-instruct"
