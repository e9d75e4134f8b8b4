"""The tool-call protocol between the model and the harness: the tools' JSON schemas, parsing a
reply's `<tool_call>` (Qwen3 style, what TRL's multi-turn GRPO parses) into a call or a format
error, and the assistant/tool turns of the HF chat format.

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


@dataclass(frozen=True)
class ParsedCall:
    """A valid tool call found in a reply."""

    name: str
    """"bash" or "submit"."""
    arguments: dict[str, Any]
    content: str = ""
    """Text of the reply before the call (thoughts), stripped."""

    @property
    def command(self) -> str | None:
        return self.arguments.get("command") if self.name == "bash" else None


@dataclass(frozen=True)
class FormatError:
    """A reply without a valid tool call."""

    kind: str
    """no_tool_call | bad_json | unknown_tool | bad_arguments | too_long."""
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
                tools: tuple[str, ...] = ("bash", "submit")) -> ParsedCall | FormatError:
    """Find the first `<tool_call>` JSON in a reply and check it against the tools."""
    text = clean_text(text)
    if len(text) > max_chars:
        return FormatError("too_long", f"the reply is longer than {max_chars} characters")
    start = text.find("<tool_call>")
    if start == -1:
        return FormatError("no_tool_call", "no tool call found", content=text.strip())
    content = text[:start].strip()
    body = text[start + len("<tool_call>"):]
    end = body.find("</tool_call>")
    body = (body if end == -1 else body[:end]).strip()
    try:
        obj, _ = json.JSONDecoder(strict=False).raw_decode(body)
    except (ValueError, RecursionError):
        return FormatError("bad_json", "the tool call is not valid JSON", content=content)
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
    return ParsedCall(name, args, content)


def assistant_message(command: str | None, content: str = "") -> dict[str, Any]:
    """An assistant turn calling bash with `command`, or submit when `command` is None."""
    name, args = ("submit", {}) if command is None else ("bash", {"command": command})
    return {"role": "assistant", "content": content,
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]}


def tool_message(content: str, name: str = "bash") -> dict[str, Any]:
    """A tool turn carrying an observation."""
    return {"role": "tool", "name": name, "content": content}
