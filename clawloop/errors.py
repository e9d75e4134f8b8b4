"""One error type for bad input: the CLI prints it as one line and exits non-zero, no traceback."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ClawloopError(Exception):
    """Bad input or an unusable environment. The message names the file and the field."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Control characters: C0 (ESC starts the sequences that clear a screen or, OSC 52, set the
clipboard; newline and CR fake or overwrite lines), DEL and C1 (0x9b is CSI on some terminals)."""


def printable(text: object) -> str:
    """`text` safe to print on a terminal: each control character written as Python writes it in
    a string (`\\x1b`, `\\n`). For anything from input shown to a user: task names and ids,
    suite and skill names, paths, error messages."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def where(path: object, field: str | None = None, line: int | None = None) -> str:
    """Format a location like `pool.jsonl:12: instruction` for error messages."""
    loc = str(path)
    if line is not None:
        loc += f":{line}"
    if field:
        loc += f": {field}"
    return loc


def describe_validation_error(e: ValidationError, prefix: str = "") -> str:
    """One line naming the first bad field, under the dotted `prefix` when given:
    `sft.learning_rat: unknown key`, `verifier.files: Field required`."""
    err = e.errors()[0]
    loc = ".".join(str(p) for p in ([prefix] if prefix else []) + list(err["loc"]))
    if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):  # (a model's, a dataclass's)
        return f"{loc or '(root)'}: unknown key"
    msg = err["msg"]
    if err["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
        if ": " in msg:
            # Our validators say "sub.key: what is wrong": join the sub-key onto the location.
            return f"{loc}.{msg}" if loc else msg
    return f"{loc or '(root)'}: {msg}"


def validated(model: type[M], obj: Any, where: str, prefix: str = "") -> M:
    """`model` validated from `obj`; a mismatch is a ClawloopError naming `where` and the field."""
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        raise ClawloopError(f"{where}: {describe_validation_error(e, prefix)}") from None
