"""The tool-call protocol between the model and the harness: the tools' JSON schemas, parsing a
reply's `<tool_call>` (Qwen3 style, what TRL's multi-turn GRPO parses) into a call or a format
error, and the assistant/tool turns of the HF chat format.

Like a real agent harness, parsing is lenient where a reply has no `<tool_call>` tag: exactly one
call written as a ```json fenced block, or as the whole (bare) reply, is accepted (instruction
models such as Qwen2.5-Coder write their calls that way zero-shot). Such a call is marked by its
`format` ("json_fence" or "bare_json", see LENIENT_FORMATS), which the step record keeps for the
diagnosis to count; the conversation stores it as a structured call, so the chat template (and
so SFT data and the next turn's prompt) renders it in the canonical `<tool_call>` form.

Apart from the harness because the policies' tests, SFT data and pretraining build and parse the
same turns without running an episode; it renders no template and holds no turn logic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command; returns its output and exit code.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to run."}},
            "required": ["command"],
        },
    },
}
SUBMIT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Finish the episode once the task is done.",
        "parameters": {"type": "object", "properties": {}},
    },
}
TOOLS: list[dict[str, Any]] = [BASH_TOOL, SUBMIT_TOOL]
"""JSON schemas of the tools, for `apply_chat_template(tools=TOOLS)`."""

_EXPLICIT = {
    "bash": "Run exactly one shell command in the working directory; returns its output and exit code. "
            "Reply with this one call and nothing else; the command is the next step of the task.",
    "submit": "Finish the episode. Call it only after checking that every file the task asks for is "
              "in place with the right content.",
}


def tools_variant(variant: str = "default", *, submit: bool = True) -> list[dict[str, Any]]:
    """The tools with the descriptions of `variant` (clawloop.core.agent.playbook.TOOL_VARIANTS):
    "default" (TOOLS, what SFT data renders) or "explicit" (how to call, when to submit). The
    names and parameters never change, so parsing and the trajectories stay the same."""
    tools = TOOLS if submit else [BASH_TOOL]
    if variant == "default":
        return tools
    if variant != "explicit":
        raise ValueError(f"tool descriptions: {variant!r} is not default or explicit")
    return [{**t, "function": {**t["function"], "description": _EXPLICIT[t["function"]["name"]]}} for t in tools]


CALL_FORMATS = ("tool_call", "json_fence", "bare_json", "bash_fence")
"""How a reply wrote its call: inside `<tool_call>` tags (canonical), as a ```json fenced block,
as the whole reply in bare JSON, or as the command itself in one ```bash fenced block (the action
format of mini-swe-agent; what an instruction model writes when it explains instead of calling).
The same as clawloop.core.trajectory.CALL_FORMATS, the step column's contract (tested; not imported
from there, which would import pyarrow)."""
LENIENT_FORMATS = ("json_fence", "bare_json", "bash_fence")
"""The formats accepted only without any `<tool_call>` tag in the reply (lenient parsing)."""


@dataclass(frozen=True)
class ParsedCall:
    """A valid tool call found in a reply."""

    name: str
    """"bash" or "submit"."""
    arguments: dict[str, Any]
    content: str = ""
    """Text of the reply before the call (thoughts), stripped."""
    format: str = "tool_call"
    """One of CALL_FORMATS."""

    @property
    def command(self) -> str | None:
        return self.arguments.get("command") if self.name == "bash" else None

    @property
    def lenient(self) -> bool:
        return self.format in LENIENT_FORMATS


@dataclass(frozen=True)
class FormatError:
    """A reply without a valid tool call."""

    kind: str
    """no_tool_call | bad_json | unknown_tool | bad_arguments | too_long | multiple_calls (more than
    one call written without `<tool_call>` tags)."""
    reason: str
    """One line for the model's hint."""
    tool: str | None = None
    """The tool name when one could be read."""
    content: str = ""


_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_text(text: str | bytes) -> str:
    """Valid UTF-8 text from whatever a backend produced (bad bytes and lone surrogates → U+FFFD)."""
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", errors="replace")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)


def parse_reply(text: str | bytes, *, max_chars: int = 16_384,
                tools: tuple[str, ...] = ("bash", "submit"), lenient: bool = True) -> ParsedCall | FormatError:
    """Find the first `<tool_call>` JSON in a reply and check it against the tools; without any
    `<tool_call>` tag (and `lenient`), one call in a ```json fence or as the bare reply."""
    text = clean_text(text)
    if len(text) > max_chars:
        return FormatError("too_long", f"the reply is longer than {max_chars} characters")
    start = text.find("<tool_call>")
    if start == -1:
        found = lenient_call(text, tools) if lenient else None
        return found or FormatError("no_tool_call", "no tool call found", content=text.strip())
    content = text[:start].strip()
    body = text[start + len("<tool_call>"):]
    end = body.find("</tool_call>")
    body = (body if end == -1 else body[:end]).strip()
    try:
        obj = _first_value(body)
    except (ValueError, RecursionError):
        return FormatError("bad_json", "the tool call is not valid JSON", content=content)
    return check_call(obj, content, tools)


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_SHELL_FENCES = ("bash", "sh", "shell", "console")
_SUBMIT_CALL = re.compile(r'\{\s*"name"\s*:\s*"submit"\s*(?:,[^{}]*(?:\{[^{}]*\}[^{}]*)?)?\}?', re.DOTALL)
"""A submit call whose arguments are not valid JSON (`{"name": "submit", "arguments": {""}}`, as
Qwen2.5-Coder-0.5B writes a third of its submits): submit takes no arguments, so the intent is
plain. Only a block that holds nothing else matches (a second "name" would be another call)."""
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def _repair_escapes(text: str) -> str:
    """Invalid JSON escapes made literal: a model writing `find . -exec rm {} \\;` inside a JSON
    string means the backslash (`\\;` has no other meaning); valid escapes stay as they are."""
    return _ESCAPE.sub(lambda m: m.group(0) if m.group(1) in '"\\/bfnrtu' else "\\\\" + m.group(1), text)


def _first_value(text: str) -> Any:
    """The JSON value `text` starts with (what follows it is ignored), invalid escapes repaired."""
    decoder = json.JSONDecoder(strict=False)
    try:
        return decoder.raw_decode(text)[0]
    except ValueError as e:
        if "Invalid \\escape" not in str(e):
            raise
    return decoder.raw_decode(_repair_escapes(text))[0]


def _values(text: str) -> tuple[list[Any], str]:
    """The JSON values `text` starts with, one after another, and the text from the first that
    does not parse on ("" when all of it did)."""
    decoder = json.JSONDecoder(strict=False)
    out, i = [], 0
    while i < len(text):
        try:
            obj, i = decoder.raw_decode(text, i)
        except ValueError:
            if not out:
                raise
            return out, text[i:]
        out.append(obj)
        while i < len(text) and text[i].isspace():
            i += 1
    return out, ""


def _broken_submit(text: str) -> bool:
    """Whether `text` is one submit call with malformed arguments and nothing else."""
    text = text.strip().removesuffix("```").strip()
    return len(text) < 200 and text.count('"name"') == 1 and _SUBMIT_CALL.fullmatch(text) is not None


def _json_values(text: str) -> list[Any] | None:
    """`text` as JSON objects or arrays and nothing else between them but whitespace (invalid
    escapes repaired), or None. A submit call with malformed arguments counts as the submit call
    it plainly is (`{"name": "submit", "arguments": {""}}`: a third of Qwen2.5-Coder-0.5B's
    submits), also after other values."""
    text = text.strip()
    if not text or text[0] not in "{[":
        return None
    submit = {"name": "submit", "arguments": {}}
    for attempt in (text, _repair_escapes(text)):
        try:
            values, rest = _values(attempt)
        except (ValueError, RecursionError):
            values, rest = [], attempt
        if not rest:
            return values
        if _broken_submit(rest):
            return [*values, submit]
    return None


def _calls_in(obj: Any, tools: tuple[str, ...]) -> list[dict[str, Any]]:
    """The objects of a JSON value that are shaped like a call: a string "name" and "arguments"
    (or "parameters"), or the name of an offered tool; a list is searched one level deep."""
    items = obj if isinstance(obj, list) else [obj]
    return [o for o in items if isinstance(o, dict) and isinstance(o.get("name"), str)
            and ("arguments" in o or "parameters" in o or o["name"] in tools)]


def lenient_call(text: str, tools: tuple[str, ...] = ("bash", "submit")) -> ParsedCall | FormatError | None:
    """The one call of a reply without `<tool_call>` tags: in ```json (or unlabelled) fenced
    blocks, else the whole reply as bare JSON (a stray closing fence after it tolerated); without
    call-shaped JSON, a lone ```bash block (`_salvaged_call`). A call followed only by submit calls
    is that call. None when there is no call at all (prose, JSON data); a format error for two
    calls or more otherwise (in one block, several blocks, or bare ones one after another), or an
    invalid call."""
    found: list[tuple[dict[str, Any], str, str]] = []
    for m in _FENCE.finditer(text):
        if m.group(1).lower() not in ("", "json"):
            continue
        for value in _json_values(m.group(2)) or []:
            found += [(c, text[:m.start()].strip(), "json_fence") for c in _calls_in(value, tools)]
    if not found:
        bare = text.strip()
        if bare.endswith("```") and bare.count("```") == 1:  # a stray fence closing a bare call
            bare = bare[:-3]
        for value in _json_values(bare) or []:
            found += [(c, "", "bare_json") for c in _calls_in(value, tools)]
    if not found:
        return _salvaged_call(text, tools)
    if len(found) > 1 and all(c.get("name") == "submit" for c, _, _ in found[1:]):
        found = found[:1]  # a call, then submit: the call runs; the model submits once it has seen the result
    if len(found) > 1:
        return FormatError("multiple_calls", f"{len(found)} tool calls found; reply with exactly one",
                           content=found[0][1])
    obj, content, fmt = found[0]
    return check_call(obj, content, tools, fmt)


def _salvaged_call(text: str, tools: tuple[str, ...]) -> ParsedCall | FormatError | None:
    """What a reply without call-shaped JSON still says unambiguously: one shell command as the
    only ```bash (sh, shell) fenced block. None otherwise; two shell blocks are two calls."""
    blocks = [(m.group(1).lower(), m.group(2), m.start()) for m in _FENCE.finditer(text)]
    shell = [(b, start) for lang, b, start in blocks if lang in _SHELL_FENCES and b.strip()]
    if len(shell) > 1:
        return FormatError("multiple_calls", f"{len(shell)} shell blocks found; reply with exactly one "
                           "command", content=text[:shell[0][1]].strip())
    if shell:
        body, start = shell[0]
        calls = [c for value in _json_values(body) or [] for c in _calls_in(value, tools)]
        if len(calls) == 1:  # a JSON call in the wrong fence is that call
            return check_call(calls[0], text[:start].strip(), tools, "json_fence")
        return check_call({"name": "bash", "arguments": {"command": body.strip()}}, text[:start].strip(),
                          ("bash",), "bash_fence")
    return None


def check_call(obj: Any, content: str, tools: tuple[str, ...], fmt: str = "tool_call") -> ParsedCall | FormatError:
    """A decoded call object checked against the tools and their arguments."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return FormatError("bad_json", 'the tool call needs "name" and "arguments"', content=content)
    name = clean_text(obj["name"])
    if name not in tools:
        return FormatError("unknown_tool", f"unknown tool {name[:40]!r}; use {' or '.join(tools)}",
                           tool=name[:200], content=content)
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args, strict=False) if args.strip() else {}
        except (ValueError, RecursionError):
            return FormatError("bad_json", "the arguments are not a JSON object", tool=name, content=content)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return FormatError("bad_arguments", "the arguments must be a JSON object", tool=name, content=content)
    if name == "bash":
        cmd = args.get("command")
        if not isinstance(cmd, str) or not cmd.strip():
            return FormatError("bad_arguments", 'bash needs a non-empty "command" string', tool=name,
                               content=content)
        if "\x00" in cmd:
            return FormatError("bad_arguments", "the command contains a NUL byte", tool=name, content=content)
        args = {"command": clean_text(cmd)}  # JSON escapes can smuggle in lone surrogates
    else:
        args = {}
    return ParsedCall(name, args, content, fmt)


def assistant_message(command: str | None, content: str = "") -> dict[str, Any]:
    """An assistant turn calling bash with `command`, or submit when `command` is None."""
    name, args = ("submit", {}) if command is None else ("bash", {"command": command})
    return {"role": "assistant", "content": content,
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]}


def tool_message(content: str, name: str = "bash") -> dict[str, Any]:
    """A tool turn carrying an observation."""
    return {"role": "tool", "name": name, "content": content}


CALL_OPENERS = {"tool_call": ("<tool_call>", r"</tool_call>\s*"), "json_fence": ("```json", r"```\s*")}
"""Call form → (opening literal, closing pattern) of one call in a reply."""


def response_template(call_form: str = "tool_call") -> dict[str, Any]:
    """How TRL/transformers parse a reply into content + tool calls (TRL's Qwen3 template), with
    calls in `<tool_call>` tags or, for a template that writes them so, in ```json blocks: set on a
    checkpoint's tokenizer by the bootstrap, read by TRL's GRPO tool loop (the harness parses
    replies itself, `parse_reply`)."""
    opener, closer = CALL_OPENERS[call_form]
    return {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "reasoning_content": {"open": "<think>", "close_pattern": r"</think>\s*", "content": "text"},
            "tool_calls": {"open": opener, "close_pattern": closer, "repeats": True,
                           "content": "json", "transform": {"type": "function", "function": "{content}"}},
            "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
        },
    }
