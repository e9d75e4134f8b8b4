"""The harness: prompt, tool-call parsing, and the turn logic of one episode (no sandbox)."""

from __future__ import annotations

import json

import pytest

from clawloop.core.agent.episode import EpisodeState
from clawloop.core.agent.harness import (
    HarnessConfig,
    format_observation,
    initial_messages,
    system_prompt,
    tools_for,
)
from clawloop.core.agent.tool_calls import TOOLS, FormatError, ParsedCall, assistant_message, parse_reply
from clawloop.core.tasks.task import Limits, Task, Verifier
from clawloop.policy.types import Generation
from sandbox.base import ExecResult


def _task(**kw: object) -> Task:
    return Task(instruction="Create hello.txt containing hi.", verifier=Verifier(files={"test.sh": {"content": "true"}}),
                **kw)


def call(name: str, args: object) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


def bash(cmd: str) -> str:
    return call("bash", {"command": cmd})


OK = ExecResult(exit_code=0, output="done\n", timed_out=False, duration_s=0.01)


def gen(text: str | bytes, tokens: int = 5) -> Generation:
    return Generation(text=text, prompt_tokens=10, completion_tokens=tokens)  # type: ignore[arg-type]


# --- parse_reply ------------------------------------------------------------------------------

def test_parse_bash_call_with_thoughts() -> None:
    r = parse_reply("I will list.\n" + bash("ls -la"))
    assert r == ParsedCall("bash", {"command": "ls -la"}, "I will list.")
    assert r.command == "ls -la"


def test_parse_submit_and_lenient_forms() -> None:
    assert parse_reply(call("submit", {})) == ParsedCall("submit", {})
    assert parse_reply('<tool_call>{"name": "submit"}').name == "submit"  # no closing tag, no args
    # arguments as a JSON string (OpenAI style) and a raw newline inside the string
    r = parse_reply('<tool_call>\n{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}\n</tool_call>')
    assert r == ParsedCall("bash", {"command": "ls"})
    r = parse_reply('<tool_call>{"name": "bash", "arguments": {"command": "echo a\nb"}}</tool_call>')
    assert isinstance(r, ParsedCall) and r.command == "echo a\nb"
    # only the first of several calls counts
    assert parse_reply(bash("pwd") + bash("ls")).command == "pwd"


def test_lenient_parsing_salvages_a_shell_block_and_a_broken_submit() -> None:
    # mini-swe-agent's action format: one ```bash block is the command, the prose before it thoughts
    r = parse_reply("To make it executable:\n\n```bash\nchmod +x deploy.sh\n```\n\nThen run it.")
    assert r == ParsedCall("bash", {"command": "chmod +x deploy.sh"}, "To make it executable:", "bash_fence")
    assert r.lenient
    script = "```sh\nfor f in *.log; do\n  gzip \"$f\"\ndone\n```"
    assert parse_reply(script).command == 'for f in *.log; do\n  gzip "$f"\ndone'
    # a JSON call in a shell fence is that call
    assert parse_reply(f"```bash\n{BARE}\n```") == ParsedCall("bash", {"command": "chmod +x deploy.sh"}, "",
                                                               "json_fence")
    # submit takes no arguments: malformed ones (a third of Qwen2.5-Coder-0.5B's submits) do not hide it
    for text in ('```json\n{"name": "submit", "arguments": {""}}\n```', '{"name": "submit", "arguments": {""}}',
                 '```json\n{"name": "submit", "arguments": {"done": }}\n```'):
        assert parse_reply(text).name == "submit", text
    assert isinstance(parse_reply('{"name": "submit", "arguments": {""}}', tools=("bash",)), FormatError)
    # a call, then submit (a broken one too): the call runs, the model submits after seeing its result
    for text in (f"{BARE}\n{SUBMIT_BARE}", f"```json\n{BARE}\n```\n```json\n{SUBMIT_BARE}\n```",
                 f'```json\n{BARE}\n{{"name": "submit", "arguments": {{""}}}}\n```'):
        r = parse_reply(text)
        assert isinstance(r, ParsedCall) and r.command == "chmod +x deploy.sh", text
    assert isinstance(parse_reply("```bash\nls\n```", lenient=False), FormatError)


@pytest.mark.parametrize(("text", "kind"), [
    ("I think we are done.", "no_tool_call"),
    ("", "no_tool_call"),
    ('<tool_call>\n{"name": "bash", "arguments": {"command": "ls"\n</tool_call>', "bad_json"),
    ("<tool_call>not json</tool_call>", "bad_json"),
    ('<tool_call>["bash"]</tool_call>', "bad_json"),
    ("<tool_call>" + "[" * 10_000 + "</tool_call>", "bad_json"),
    (call("python", {"code": "1"}), "unknown_tool"),
    (call("bash", {"cmd": "ls"}), "bad_arguments"),
    (call("bash", {"command": ""}), "bad_arguments"),
    (call("bash", {"command": 3}), "bad_arguments"),
    (call("bash", ["ls"]), "bad_arguments"),
    (call("bash", {"command": "ls\x00"}), "bad_arguments"),
    (bash("x" * 20_000), "too_long"),
])
def test_parse_format_errors(text: str, kind: str) -> None:
    r = parse_reply(text)
    assert isinstance(r, FormatError) and r.kind == kind, r


def test_parse_bad_utf8() -> None:
    r = parse_reply(b"\xff\xfe" + bash("ls").encode())
    assert isinstance(r, ParsedCall) and r.content == "\ufffd\ufffd"
    r = parse_reply("\udcff" + bash("cat f\udcff"))  # lone surrogates from a sloppy decoder
    assert isinstance(r, ParsedCall) and r.command is not None
    r.command.encode("utf-8")


# --- prompts ----------------------------------------------------------------------------------

def test_system_prompt_and_initial_messages() -> None:
    task = _task(workdir="/workspace/proj", limits=Limits(max_turns=7, command_timeout_s=12))
    sp = system_prompt(task, HarnessConfig(max_turns=None, command_timeout_s=None))  # None: the task's limits
    assert "/workspace/proj" in sp and "7 turns" in sp and "12 s per" in sp and "submit" in sp
    assert "6 turns" in system_prompt(task) and "10 s per" in system_prompt(task)  # the schema's rollout limits
    no_submit = system_prompt(task, HarnessConfig(submit_tool=False, max_turns=3))
    assert "without a tool call" in no_submit and "3 turns" in no_submit
    msgs = initial_messages(task)
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[1]["content"] == task.instruction


def test_tools_and_assistant_message() -> None:
    assert [t["function"]["name"] for t in TOOLS] == ["bash", "submit"]
    assert [t["function"]["name"] for t in tools_for(HarnessConfig(submit_tool=False))] == ["bash"]
    assert assistant_message("ls") == {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}]}
    assert assistant_message(None)["tool_calls"][0]["function"] == {"name": "submit", "arguments": {}}


def test_format_observation_truncates_head_and_tail() -> None:
    out = "\n".join(f"line {i}" for i in range(5000))
    obs = format_observation(ExecResult(1, out, False, 0.5), limit=200)
    assert obs.startswith("line 0\n") and "line 4999" in obs and "characters cut" in obs
    assert obs.endswith("[exit code 1]") and len(obs) < 300
    obs = format_observation(ExecResult(124, "", True, 3.0))
    assert obs == "[exit code 124; timed out after 3.0s]"


# --- EpisodeState -----------------------------------------------------------------------------

def test_episode_bash_then_submit() -> None:
    st = EpisodeState(_task())
    assert st.on_generation(gen("Let me write it.\n" + bash("echo hi > hello.txt"))) == "echo hi > hello.txt"
    st.on_result(OK)
    assert st.on_generation(gen(call("submit", {}))) is None
    assert st.termination == "submit" and st.done
    roles = [m["role"] for m in st.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert st.messages[2]["content"] == "Let me write it."
    assert st.messages[3] == {"role": "tool", "name": "bash", "content": "done\n[exit code 0]"}
    assert [(s.tool, s.command, s.exit_code, s.format_error) for s in st.steps] == [
        ("bash", "echo hi > hello.txt", 0, False), ("submit", None, None, False)]
    assert st.completion_tokens == 10 and st.prompt_tokens == 20


def test_three_format_errors_in_a_row_end_the_episode() -> None:
    st = EpisodeState(_task(), HarnessConfig(max_format_errors=3))
    assert st.on_generation(gen("hello")) is None
    assert st.messages[-1]["role"] == "user" and "Format error" in st.messages[-1]["content"]
    assert st.on_generation(gen(bash("ls"))) == "ls"  # a valid call resets the streak
    st.on_result(OK)
    for text in ("no call", call("rm_rf", {}), '<tool_call>{"name": "bash"'):
        assert not st.done
        st.on_generation(gen(text))
    assert st.termination == "format_errors" and st.n_format_errors == 4
    assert [s.error_kind for s in st.steps if s.format_error] == [
        "no_tool_call", "no_tool_call", "unknown_tool", "bad_json"]
    assert st.steps[3].tool == "rm_rf"
    assert st.messages[-1]["role"] == "assistant"  # no hint after the last one


def test_max_turns_and_no_submit_mode() -> None:
    st = EpisodeState(_task(), HarnessConfig(max_turns=2))
    st.on_generation(gen(bash("ls")))
    st.on_result(OK)
    st.on_generation(gen(bash("ls")))
    st.on_result(OK)
    assert st.termination == "max_turns" and len(st.steps) == 2
    st = EpisodeState(_task(), HarnessConfig(submit_tool=False))
    assert st.on_generation(gen("All done.")) is None
    assert st.termination == "no_tool_call" and st.n_format_errors == 0
    assert st.messages[-1] == {"role": "assistant", "content": "All done."}
    st = EpisodeState(_task(), HarnessConfig(submit_tool=False))
    st.on_generation(gen(call("submit", {})))  # submit is not offered here
    assert st.steps[0].error_kind == "unknown_tool"


def test_huge_and_binary_replies_are_format_errors() -> None:
    st = EpisodeState(_task(), HarnessConfig(max_format_errors=3))
    st.on_generation(gen("x" * 10_000_000))
    st.on_generation(gen(b"\xff\xfe\x00 garbage"))
    assert st.n_format_errors == 2 and not st.done
    assert len(st.steps[0].content) == HarnessConfig().max_reply_chars
    json.dumps(st.messages).encode("utf-8")
    assert sum(len(m["content"]) for m in st.messages) < 40_000


def test_timeout_and_context_exhaustion() -> None:
    """The episode budget counts the agent's commands, not the time spent generating (a row of a
    batch waits for the others' tokens): a budget means the same at batch 1 and 36."""
    st = EpisodeState(_task(), HarnessConfig(episode_timeout_s=10))
    import time

    time.sleep(0.01)  # generation-side waiting: not counted
    assert st.check_time() and st.time_left() == 10
    assert st.on_generation(gen('<tool_call>\n{"name": "bash", "arguments": {"command": "sleep 6"}}\n</tool_call>'))
    st.on_result(ExecResult(0, "", False, 6.0))
    assert st.check_time() and 3.9 < st.command_timeout() <= 4.0  # the rest of the budget
    assert st.on_generation(gen('<tool_call>\n{"name": "bash", "arguments": {"command": "sleep 9"}}\n</tool_call>'))
    st.on_result(ExecResult(124, "", True, 4.0))
    assert not st.check_time() and st.termination == "timeout"
    st = EpisodeState(_task())
    assert st.on_generation(Generation("", 9000, 0, "context")) is None
    assert st.termination == "max_turns"
    st = EpisodeState(_task(), HarnessConfig(command_timeout_s=5))
    assert 4.9 < st.command_timeout() <= 5


# --- lenient parsing: one call without <tool_call> tags ----------------------------------------

FENCED = 'I will copy the files.\n```json\n{"name": "bash", "arguments": {"command": "cp in/*.csv out/"}}\n```'
BARE = '{"name": "bash", "arguments": {"command": "chmod +x deploy.sh"}}'
SUBMIT_BARE = '{"name": "submit", "arguments": {}}'


def test_lenient_fenced_and_bare_json_calls() -> None:
    r = parse_reply(FENCED)
    assert r == ParsedCall("bash", {"command": "cp in/*.csv out/"}, "I will copy the files.", "json_fence")
    assert r.lenient
    r = parse_reply(BARE)
    assert r == ParsedCall("bash", {"command": "chmod +x deploy.sh"}, "", "bare_json") and r.lenient
    assert parse_reply("\n  " + BARE + "\n").format == "bare_json"
    # an unlabelled fence, a submit, arguments as a JSON string, a reply cut inside its fence
    assert parse_reply(f"```\n{BARE}\n```").format == "json_fence"
    assert parse_reply('```json\n{"name": "submit", "arguments": {}}\n```') == ParsedCall(
        "submit", {}, "", "json_fence")
    r = parse_reply('```json\n{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}\n```')
    assert isinstance(r, ParsedCall) and r.command == "ls"
    assert parse_reply(f"```json\n{BARE}\n").command == "chmod +x deploy.sh"
    # a tagged call is canonical, whatever else the reply holds
    r = parse_reply(FENCED + "\n" + bash("ls"))
    assert r.format == "tool_call" and r.command == "ls" and not r.lenient
    # a stray closing fence after a bare call; an invalid JSON escape (find's \;) means the backslash
    assert parse_reply(BARE + "\n```").format == "bare_json"
    find = r'{"name": "bash", "arguments": {"command": "find . -name \"*.tmp\" -exec rm {} \;"}}'
    assert parse_reply(find).command == 'find . -name "*.tmp" -exec rm {} \\;'
    assert parse_reply(f"<tool_call>\n{find}\n</tool_call>").command == 'find . -name "*.tmp" -exec rm {} \\;'
    assert parse_reply(r'{"name": "bash", "arguments": {"command": "printf \"a\\tb\\n\""}}').command == 'printf "a\\tb\\n"'
    # strict parsing when asked
    r = parse_reply(BARE, lenient=False)
    assert isinstance(r, FormatError) and r.kind == "no_tool_call"


@pytest.mark.parametrize(("text", "kind"), [
    (FENCED + "\n" + FENCED, "multiple_calls"),                       # two fenced calls
    (f"[{BARE}, {BARE}]", "multiple_calls"),                           # two bare calls
    (f"{SUBMIT_BARE}\n{BARE}", "multiple_calls"),                       # one after another
    (f"```json\n[{BARE}, {BARE}]\n```", "multiple_calls"),
    ("I would run chmod +x deploy.sh to make it executable.", "no_tool_call"),  # prose
    (f"Run this: {BARE} and then check.", "no_tool_call"),             # JSON inside prose, no fence
    ("```bash\nls\n```\nthen\n```sh\npwd\n```", "multiple_calls"),     # two shell blocks
    ('```json\n{"name": "bash", "arguments": {"command": "ls"}}\n{"name": "bash", "arguments": {""}}\n```',
     "no_tool_call"),                                                  # a call and a broken one: not read
    ('```python\nprint(1)\n```', "no_tool_call"),                      # not a shell block
    ('```json\n{"files": ["a.csv"], "count": 1}\n```', "no_tool_call"),  # JSON data, not a call
    (BARE + " then more", "no_tool_call"),                            # not the whole reply
    ('```json\n{"name": "python", "arguments": {"code": "1"}}\n```', "unknown_tool"),
    ('{"name": "bash", "arguments": {"cmd": "ls"}}', "bad_arguments"),
])
def test_lenient_parsing_refuses_what_is_not_exactly_one_call(text: str, kind: str) -> None:
    r = parse_reply(text)
    assert isinstance(r, FormatError) and r.kind == kind, r


def test_lenient_call_is_recorded_and_stored_in_canonical_form() -> None:
    st = EpisodeState(_task())
    assert st.on_generation(gen(FENCED)) == "cp in/*.csv out/"
    st.on_result(OK)
    assert st.on_generation(gen(bash("cat out/a.csv"))) == "cat out/a.csv"
    st.on_result(OK)
    st.on_generation(gen(call("submit", {})))
    assert st.termination == "submit" and st.n_format_errors == 0
    assert [s.format for s in st.steps] == ["json_fence", "tool_call", "tool_call"]
    assert not any(s.format_error for s in st.steps)
    # the conversation keeps the call as a structured call: templates render it as <tool_call>
    assert st.messages[2] == {"role": "assistant", "content": "I will copy the files.", "tool_calls": [
        {"type": "function", "function": {"name": "bash", "arguments": {"command": "cp in/*.csv out/"}}}]}
    row = st.steps[0].to_row("e")
    assert row["format"] == "json_fence" and row["content"] == FENCED  # the raw reply stays as written
    st = EpisodeState(_task(), HarnessConfig(lenient_calls=False))
    assert st.on_generation(gen(BARE)) is None and st.steps[0].format_error and st.steps[0].format is None


@pytest.mark.parametrize("template", ["clawloop", "qwen2.5", "qwen2.5_json"])
def test_lenient_form_trains_as_the_canonical_tool_call(template: str) -> None:
    """SFT data and the next turn's prompt render a lenient call in the template's own call form:
    <tool_call> with the project's template and the Qwen2.5 one, a ```json block with the Qwen2.5
    variant the Qwen base's checkpoint gets (clawloop/bootstrap/templates)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from clawloop.bootstrap.scratch import TEMPLATE

    path = TEMPLATE if template == "clawloop" else TEMPLATE.parent / f"{template}_chat_template.jinja"
    st = EpisodeState(_task())
    st.on_generation(gen(FENCED))
    assert st.pending == "cp in/*.csv out/"  # the harness runs the block's call
    rendered = render_jinja_template([st.messages], tools=TOOLS, chat_template=path.read_text())
    text = rendered[0][0] if isinstance(rendered, tuple) else rendered[0]
    call = '{"name": "bash", "arguments": {"command": "cp in/*.csv out/"}}'
    if template == "qwen2.5_json":
        assert f"<|im_start|>assistant\nI will copy the files.\n```json\n{call}\n```<|im_end|>" in text
        assert "<tool_call>" not in text
    else:
        assert f"<|im_start|>assistant\nI will copy the files.\n<tool_call>\n{call}\n</tool_call><|im_end|>" in text
        assert "```" not in text


def test_format_hint_shows_the_form_but_no_command_to_copy() -> None:
    from clawloop.core.agent.harness import hint_message

    st = EpisodeState(_task(), HarnessConfig(format_hint="tool_call"))
    st.on_generation(gen("I would list the files first."))
    hint = st.messages[-1]["content"]
    assert "<tool_call>" in hint and '"name": "bash"' in hint
    cmd = json.loads(hint.split("<tool_call>\n", 1)[1].split("\n</tool_call>", 1)[0])["arguments"]["command"]
    assert cmd.startswith("<") and cmd.endswith(">")  # a placeholder, not a runnable command
    for concrete in ("ls", "cat ", "pwd", "echo"):
        assert f'"command": "{concrete}' not in hint
    no_submit = hint_message(FormatError("no_tool_call", "no tool call found"), HarnessConfig(submit_tool=False,
                                                                                        format_hint="tool_call"))
    assert "submit" not in no_submit["content"]


def test_call_formats_are_the_trajectory_contract() -> None:
    from clawloop.core import trajectory
    from clawloop.core.agent import tool_calls

    assert tool_calls.CALL_FORMATS == trajectory.CALL_FORMATS
    assert tool_calls.LENIENT_FORMATS == trajectory.LENIENT_FORMATS


# --- what the harness learned (HarnessEdits, carried by the playbook) --------------------------

def _learned(**edits: object) -> HarnessConfig:
    from clawloop.core.agent.playbook import HarnessEdits, Playbook

    return HarnessConfig(max_turns=6, command_timeout_s=10,
                         playbook=Playbook(token_budget=10, harness=HarnessEdits(**edits)))  # type: ignore[arg-type]


def test_learned_variants_change_prompt_hint_tools_and_observations() -> None:
    from clawloop.core.agent.harness import hint_message
    from clawloop.core.agent.playbook import METHOD_HEADER, strip_playbook

    task = _task()
    plain = system_prompt(task, HarnessConfig(max_turns=6, command_timeout_s=10))
    steps = system_prompt(task, _learned(system_template="steps"))
    assert steps.startswith(plain + "\n\n" + METHOD_HEADER) and "Check the result" in steps
    # the weights still train on the plain prompt: the variant's section is cut off like a playbook
    assert strip_playbook(initial_messages(task, _learned(system_template="steps"))) == \
        initial_messages(task, HarnessConfig(max_turns=6, command_timeout_s=10))
    err = FormatError("no_tool_call", "no tool call found")
    for variant, marker in (("json_fence", "```json"), ("short", "next step of the task")):
        hint = hint_message(err, _learned(format_hint=variant))["content"]
        assert marker in hint and "<tool_call>" not in hint
        for concrete in ("ls", "cat ", "pwd", "echo"):  # a placeholder at most, never a command to copy
            assert f'"command": "{concrete}' not in hint
    explicit = tools_for(_learned(tool_descriptions="explicit"))
    assert [t["function"]["name"] for t in explicit] == ["bash", "submit"]
    assert [t["function"]["parameters"] for t in explicit] == [t["function"]["parameters"] for t in TOOLS]
    assert explicit[0]["function"]["description"] != TOOLS[0]["function"]["description"]
    assert tools_for(HarnessConfig()) == TOOLS
    st = EpisodeState(task, _learned(observation_chars=300))
    st.on_generation(gen(bash("seq 1000")))
    st.on_result(ExecResult(exit_code=0, output="x" * 5000, timed_out=False, duration_s=0.01))
    assert len(st.messages[-1]["content"]) < 400 and "characters cut" in st.messages[-1]["content"]


def test_a_learned_budget_never_raises_the_harness_or_the_task_limit() -> None:
    """The guard at application: whatever a playbook.json says, a budget edit only lowers."""
    task = _task(limits=Limits(max_turns=4, command_timeout_s=5))
    raised = EpisodeState(task, _learned(max_turns=50, command_timeout_s=600))
    assert (raised.max_turns, raised.command_timeout_s) == (4, 5)  # min(edit, harness 6/10, task 4/5)
    lowered = EpisodeState(task, _learned(max_turns=2, command_timeout_s=1))
    assert (lowered.max_turns, lowered.command_timeout_s) == (2, 1)
    assert "Limits: 2 turns, 1 s per command" in lowered.messages[0]["content"]
    # the eval path (no harness budget): the task's own limit caps the edit
    free = EpisodeState(task, HarnessConfig(playbook=_learned(max_turns=9).playbook))
    assert free.max_turns == 4


def test_read_observation_inverts_format_observation() -> None:
    from clawloop.core.agent.harness import format_observation, read_observation

    for output, code, timed_out in [("a.txt\nb.txt\n", 0, False), ("", 1, False), ("partial", -9, True)]:
        obs = format_observation(ExecResult(exit_code=code, output=output, timed_out=timed_out, duration_s=10.0))
        head, got = read_observation(obs)
        assert got == code and head.strip() == output.strip(), obs
    assert read_observation("no marker here") == ("no marker here", None)
    assert read_observation("x\n[exit code 2]\nmore\n[exit code 7]") == ("x\n[exit code 2]\nmore\n", 7)


def test_a_repeated_command_is_pointed_out_in_its_observation() -> None:
    from clawloop.core.agent.harness import read_observation

    st = EpisodeState(_task())
    for cmd in ("./build.sh", "./build.sh", "cat build.sh", "./build.sh"):
        assert st.on_generation(gen(bash(cmd))) == cmd
        st.on_result(OK)
    notes = ["same command as your last turn" in m["content"] for m in st.messages if m["role"] == "tool"]
    assert notes == [False, True, False, False]  # only a verbatim repeat of the one before
    second = [m["content"] for m in st.messages if m["role"] == "tool"][1]
    assert read_observation(second) == ("done\n", 0)  # the note does not change what the observation reads as
    assert "call submit" in second
    quiet = EpisodeState(_task(), HarnessConfig(repeat_note=False, submit_tool=False))
    for cmd in ("ls", "ls"):
        quiet.on_generation(gen(bash(cmd)))
        quiet.on_result(OK)
    assert not any("same command" in m["content"] for m in quiet.messages if m["role"] == "tool")
    loud = EpisodeState(_task(), HarnessConfig(submit_tool=False))
    for cmd in ("ls", "ls"):
        loud.on_generation(gen(bash(cmd)))
        loud.on_result(OK)
    assert "reply without a tool call" in loud.messages[-1]["content"]


def test_the_format_hint_follows_the_configured_call_form() -> None:
    st = EpisodeState(_task(), HarnessConfig(format_hint="json_fence", max_format_errors=2))
    st.on_generation(gen("I would list the files."))
    assert "```json" in st.messages[-1]["content"] and "<tool_call>" not in st.messages[-1]["content"]
    assert "ls -la" not in st.messages[-1]["content"]  # a placeholder, never a command to copy


SUBMIT = "<tool_call>\n" + SUBMIT_BARE + "\n</tool_call>"


def test_a_submit_after_a_failed_command_is_answered_once_and_the_data_keeps_the_fix() -> None:
    """submit_check: the first submit before any command, or right after a failed one, gets a note
    and the episode goes on; the second submit ends it. Training data cuts the call and its note."""
    from clawloop.core.agent.harness import strip_submit_checks

    failed = ExecResult(128, "fatal: not a git repository\n", False, 0.01)
    st = EpisodeState(_task(), HarnessConfig(submit_check=True))
    assert st.on_generation(gen(bash("git commit -am x"))) == "git commit -am x"
    st.on_result(failed)
    assert st.on_generation(gen(SUBMIT)) is None and not st.done
    assert st.messages[-1]["name"] == "submit_check" and "exit code 128" in st.messages[-1]["content"]
    assert st.steps[-1].tool == "submit" and "exit code 128" in (st.steps[-1].output or "")
    assert st.on_generation(gen(bash("cd repo && git commit -am x"))) == "cd repo && git commit -am x"
    st.on_result(OK)
    assert st.on_generation(gen(SUBMIT)) is None and st.termination == "submit"
    kept = strip_submit_checks(st.messages)
    assert [m["role"] for m in kept] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert not any(m.get("name") == "submit_check" for m in kept)

    # only once: a second submit after another failure ends the episode
    again = EpisodeState(_task(), HarnessConfig(submit_check=True))
    assert again.on_generation(gen(SUBMIT)) is None and "no command has run" in again.messages[-1]["content"]
    again.on_generation(gen(bash("false")))
    again.on_result(failed)
    again.on_generation(gen(SUBMIT))
    assert again.termination == "submit" and len(again.steps) == 3
    # after a command that worked, and with the check off, submit ends the episode at once
    ok = EpisodeState(_task(), HarnessConfig(submit_check=True))
    ok.on_generation(gen(bash("ls")))
    ok.on_result(OK)
    ok.on_generation(gen(SUBMIT))
    assert ok.termination == "submit"
    off = EpisodeState(_task())
    off.on_generation(gen(SUBMIT))
    assert off.termination == "submit"
    # a learned harness edit (the playbook's) turns the check on as the config does
    from clawloop.core.agent.harness import with_edits
    from clawloop.core.agent.playbook import HarnessEdits

    learned = EpisodeState(_task(), with_edits(HarnessConfig(), HarnessEdits(submit_check=True)))
    learned.on_generation(gen(SUBMIT))
    assert not learned.done and learned.messages[-1]["name"] == "submit_check"
    # the note spends a turn: on the last turn a checked submit ends the episode at the limit
    last = EpisodeState(_task(), HarnessConfig(submit_check=True, max_turns=1))
    last.on_generation(gen(SUBMIT))
    assert last.termination == "max_turns"
