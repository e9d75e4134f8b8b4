"""One error type for bad input: the CLI prints it as one line and exits non-zero, no traceback."""


class ClawloopError(Exception):
    """Bad input or an unusable environment. The message names the file and the field."""


def where(path: object, field: str | None = None, line: int | None = None) -> str:
    """Format a location like `pool.jsonl:12: instruction` for error messages."""
    loc = str(path)
    if line is not None:
        loc += f":{line}"
    if field:
        loc += f": {field}"
    return loc
