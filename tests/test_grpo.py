"""GRPO: the shell environment (real bwrap sandboxes), masking of infrastructure errors, two
end-to-end GRPOTrainer steps on CPU."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import orjson
import pytest

from clawloop.config.train import GRPOParams
from clawloop.core.agent.harness import initial_messages
from clawloop.core.agent.tool_calls import BASH_TOOL, SUBMIT_TOOL, TOOLS
from clawloop.core.tasks.task import FileSpec, Solution, Task, Verifier
from clawloop.errors import ClawloopError
from clawloop.phases.train.grpo import ShellEnvironment, environment_factory, grpo_dataset

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEST_SH = ('if [ "$(cat /workspace/{f} 2>/dev/null)" = "{v}" ]; then echo 1; else echo 0; fi '
           '> /logs/verifier/reward.txt')




def make_task(name: str = "a.txt", value: str = "alpha", *, test_sh: str | None = None, **kw: object) -> Task:
    return Task(instruction=f"Write {value} into {name}.", skill="files", level=1,
                verifier=Verifier(files={"test.sh": FileSpec(content=test_sh or TEST_SH.format(f=name, v=value))}),
                solution=Solution(steps=[f"echo {value} > {name}"]), **kw)


def row(task: Task) -> dict[str, object]:
    return {"prompt": initial_messages(task), "task": orjson.dumps(task.to_json()).decode()}


def _is_open(env: ShellEnvironment) -> bool:
    """Whether the environment's episode holds an open sandbox."""
    try:
        return env.episode is not None and env.episode.env is not None and env.episode.env.sandbox is not None
    except ClawloopError:  # closed
        return False


def test_tools_are_exactly_the_harness_tools() -> None:
    from transformers.utils import get_json_schema

    env = environment_factory("bwrap")()
    public = [n for n, _ in inspect.getmembers(type(env), inspect.isfunction) if not n.startswith("_")]
    assert public == ["bash", "get_reward", "reset", "submit"]  # TRL: reset/get_reward + two tools
    assert json.dumps(get_json_schema(env.bash)) == json.dumps(BASH_TOOL)
    assert json.dumps(get_json_schema(env.submit)) == json.dumps(SUBMIT_TOOL)


def test_environment_runs_commands_and_verifies_in_bwrap() -> None:
    env_cls = environment_factory("bwrap")
    env = env_cls()
    task = make_task()
    assert env.reset(**row(task)) is None
    assert env.bash("printf 'hi\\n'") == "hi\n[exit code 0]"
    assert env.bash("echo alpha > a.txt; exit 3") == "[exit code 3]"
    env.submit()
    assert env.bash("rm a.txt") == "[the task was already submitted]"
    assert env.get_reward() == 1.0
    assert not _is_open(env)  # closed after the verdict
    env.reset(**row(task))  # a reused instance starts over in a fresh sandbox
    assert env.bash("cat a.txt") .endswith("[exit code 1]")
    assert env.get_reward() == 0.0
    assert dict(env_cls.stats) == {"passed": 1, "failed": 1}


def test_grpo_episodes_follow_the_rollouts_turn_rules() -> None:
    """GRPO's tool calls step through EpisodeState like every rollout's replies: the repeat note, the
    submit check and the turn limit are the harness's, not TRL's own."""
    from clawloop.core.agent.harness import HarnessConfig, submit_check_note

    env = environment_factory("bwrap", harness_config=HarnessConfig(max_turns=4, submit_check=True))()
    env.reset(**row(make_task()))
    first = env.bash("ls /nonexistent")
    assert first.endswith("[exit code 2]")
    assert "same command" in env.bash("ls /nonexistent").lower()  # the repeat note, as rollouts write it
    assert env.submit() == submit_check_note(2)  # the first submit after a failure is answered, not taken
    assert env.bash("echo alpha > a.txt") == "[exit code 0]"  # turn 4 of 4: the episode ends after it
    assert env.bash("ls") == "[the episode is over: max_turns]"
    assert env.get_reward() == 1.0


def test_grpo_sandboxes_mount_the_task_runtime() -> None:
    """Bug: GRPO opened its sandboxes with an empty config, so the task runtime (python3 with
    pytest, pandas, ...) that rollouts and reference trajectories see was missing there."""
    from clawloop.core.tasks.environment import default_config, open_sandbox

    if default_config().runtime_dir is None:
        pytest.skip("no task runtime: run scripts/setup.sh")
    with open_sandbox("bwrap") as sb:
        rollout_python = sb.exec("command -v python3", timeout=10).output
    env = environment_factory("bwrap")()
    env.reset(**row(make_task()))
    assert env.bash("command -v python3") == rollout_python + "[exit code 0]"
    assert rollout_python.startswith("/opt/clawloop-runtime/")
    env.get_reward()


def test_claw_eval_live_tasks_are_graded_by_their_adapter() -> None:
    """Bug: GRPO's reward ran the standard verifier on every task, so a Claw-Eval-Live task (a
    snapshot step graded on the host) was always an infrastructure error: reward None, masked."""
    from clawloop.core.tasks import claw_eval_live as cel

    suite = Path(__file__).resolve().parents[1] / "benchmarks" / "fixtures" / "claw-eval-live"
    d = suite / "tasks" / "CTB_FX01_log_error_count"
    task = cel.load_claw_eval_task(d, grader_root=suite / "_grader_root")
    env = environment_factory("bwrap")()
    env.reset(**row(task))
    assert env.bash((d / "solution" / "solve.sh").read_text()).endswith("[exit code 0]")
    assert env.get_reward() == 1.0


def test_infrastructure_errors_give_no_reward_until_the_agent_acts() -> None:
    env_cls = environment_factory("bwrap")
    env = env_cls()
    env.reset(**row(make_task(setup=["exit 9"])))
    assert env.error and env.error.startswith("setup:")
    assert env.bash("ls") == "[the sandbox is unavailable]"
    assert env.get_reward() is None
    env.reset(**row(make_task(test_sh="echo no reward file")))
    assert env.get_reward() is None  # a verifier error before any command: not the agent's doing, masked
    env.reset(**row(make_task(test_sh="echo no reward file")))
    env.bash("echo alpha > a.txt")
    assert env.get_reward() == 0.0  # after the agent acted it may be its doing: scored as a failure
    assert dict(env_cls.stats) == {"error": 3, "scored_error": 1}
    env.reset(**row(make_task()))
    assert _is_open(env)
    env_cls.close_all()
    assert not _is_open(env)


def test_bootstrap_tokenizer_parses_tool_calls_for_trl(tiny_model: Path) -> None:
    """TRL's tool loop parses replies with the tokenizer's response template."""
    from trl.chat_template_utils import (
        is_chat_template_prefix_preserving,
        parse_response,
        supports_tool_calling,
    )

    from clawloop.artifacts.checkpoint import load_tokenizer

    tok = load_tokenizer(tiny_model)
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)
    reply = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -l"}}\n</tool_call><|im_end|>'
    # text, then ids: transformers 5.25 returns a BatchEncoding from a tokenizing apply_chat_template
    prefix_text = tok.apply_chat_template([{"role": "user", "content": "x"}], tools=TOOLS, add_generation_prompt=True,
                                          tokenize=False)
    prefix = tok(prefix_text, add_special_tokens=False)["input_ids"]
    parsed = parse_response(tok, tok(reply, add_special_tokens=False)["input_ids"], prefix=prefix, tools=TOOLS)
    assert parsed["tool_calls"] == [{"type": "function", "function": {"name": "bash",
                                                                      "arguments": {"command": "ls -l"}}}]


def test_a_tokenizer_that_cannot_read_its_own_calls_is_fitted_or_refused(tiny_model: Path) -> None:
    """A checkpoint whose response template reads `<tool_call>` tags while its chat template writes
    ```json blocks (a Qwen base bootstrapped before `call_form`) gets the json-fence reader; one whose
    calls no form reads is a one-line error, not a GRPO run whose rollouts never run a command."""
    from clawloop.artifacts.checkpoint import load_tokenizer
    from clawloop.core.agent.tool_calls import response_template
    from clawloop.phases.train.grpo import fit_response_template, reads_own_calls

    tok = load_tokenizer(tiny_model)
    assert reads_own_calls(tok) and fit_response_template(tok, "base") is tok
    tok.response_template = response_template("json_fence")
    assert not reads_own_calls(tok)  # tags written, fences read
    assert fit_response_template(tok, "base").response_template == response_template("tool_call")
    tok.chat_template = tok.chat_template.replace("<tool_call>", "<call>").replace("</tool_call>", "</call>")
    with pytest.raises(ClawloopError, match="base: tokenizer: its response template does not read"):
        fit_response_template(tok, "base")


@pytest.mark.slow
def test_two_grpo_steps_end_to_end(tiny_model: Path, tmp_path: Path) -> None:
    from clawloop.phases.train.grpo import build_trainer, run_grpo

    coin = make_task("c.txt", "coin", test_sh="echo $((RANDOM % 2)) > /logs/verifier/reward.txt")
    broken = make_task("b.txt", "broken", test_sh="exit 0")  # writes no reward: infrastructure error
    tasks = [coin, broken]
    params = GRPOParams(max_steps=2, num_generations=2, per_device_train_batch_size=4,
                        max_completion_length=48, max_turns=2, learning_rate=1e-5, save_steps=1000)

    trainer, env_cls = build_trainer(tiny_model, tasks, params, tmp_path / "probe")
    try:  # GRPO prompts render the same as SFT / rollout prompts
        tok, prompt = trainer.processing_class, initial_messages(coin)
        assert (tok.apply_chat_template(prompt, tools=trainer._env_tools[None], tokenize=False)
                == tok.apply_chat_template(prompt, tools=TOOLS, tokenize=False))
    finally:
        env_cls.close_all()
    del trainer

    dest = tmp_path / "out"
    meta = run_grpo(tiny_model, tasks, params, tmp_path / "stage", dest, backend="bwrap")
    m = meta["metrics"]
    assert meta["steps"] == 2 and m["rollouts"] == 8
    # every rollout of the broken task is an error; masked unless the agent ran a command (then scored 0)
    assert m["rollouts_error"] == 4 and meta["masked_rollouts"] == 4 - m.get("rollouts_scored_error", 0)
    assert 0.0 <= m["reward"] <= 1.0  # NaN (masked) rewards stay out of the mean
    assert (dest / "model.safetensors").is_file() and (dest / "tokenizer_config.json").is_file()
    assert json.loads((dest / "train_meta.json").read_text())["method"] == "grpo"


def test_grpo_trains_only_the_top_layers_when_asked(tiny_model: Path, tmp_path: Path) -> None:
    """grpo.trainable_layers freezes as SFT does: on a CPU the backward pass is most of a step."""
    from clawloop.phases.train.grpo import build_trainer

    params = GRPOParams(max_steps=1, num_generations=2, per_device_train_batch_size=2, trainable_layers=1)
    trainer, env_cls = build_trainer(tiny_model, [make_task("a.txt", "alpha")], params, tmp_path / "stage")
    env_cls.close_all()
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith(("model.layers.3.", "model.norm.")) for n in trainable), sorted(trainable)


def test_grpo_dataset_and_batch_check(tmp_path: Path) -> None:
    from clawloop.errors import ClawloopError
    from clawloop.phases.train.grpo import grpo_config

    ds = grpo_dataset([make_task()])
    assert ds[0]["prompt"] == initial_messages(make_task())
    assert Task.from_json(json.loads(ds[0]["task"])) == make_task()
    with pytest.raises(ClawloopError, match="no tasks"):
        grpo_dataset([])
    with pytest.raises(ClawloopError, match="multiple of num_generations"):
        grpo_config(GRPOParams(num_generations=3, per_device_train_batch_size=4), tmp_path)


def test_without_submit_tool_only_bash_is_offered() -> None:
    from clawloop.core.agent.harness import HarnessConfig

    env_cls = environment_factory("bwrap", harness_config=HarnessConfig(submit_tool=False))
    tools = [n for n, _ in inspect.getmembers(env_cls, inspect.isfunction) if not n.startswith("_")]
    assert tools == ["bash", "get_reward", "reset"]
