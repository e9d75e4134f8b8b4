"""Task pools: JSONL files of tasks, one per line, written atomically."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from clawloop.core.io import iter_jsonl, write_jsonl
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError, describe_validation_error


def parse_task(obj: object, where: str) -> Task:
    """Parse one task object; errors name `where` and the field."""
    if not isinstance(obj, dict):
        raise ClawloopError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    try:
        return Task.from_json(obj)
    except ValidationError as e:
        raise ClawloopError(f"{where}: {describe_validation_error(e)}") from None
    except ValueError as e:
        raise ClawloopError(f"{where}: {e}") from None


def refused_fields(task: Task) -> list[str]:
    """What of a parsed task clawloop refuses to act on (`field: why`); `clawloop check` reports it.
    A Claw-Eval-Live record naming its own grader root: grading refuses it (the user names the
    root, clawloop.core.tasks.claw_eval_grading), so the task can never be graded from this line."""
    from clawloop.core.tasks import claw_eval_live as cel

    rec = task.metadata.get(cel.KEY)
    if isinstance(rec, dict) and rec.get("grader_root") is not None:
        return [f"metadata.{cel.KEY}.grader_root: named by the task; grading refuses it (the user names the "
                "grader package with --grader-root)"]
    return []


def read_pool(path: str | Path) -> list[Task]:
    """Read every task of a JSONL pool; the first bad line raises with file:line and field."""
    return [parse_task(obj, f"{path}:{lineno}") for lineno, obj in iter_jsonl(path)]


def read_pool_lenient(path: str | Path) -> tuple[list[Task], list[str]]:
    """Read a pool, collecting bad lines as error strings instead of stopping at the first."""
    tasks: list[Task] = []
    errors: list[str] = []
    path = Path(path)
    if not path.exists():
        raise ClawloopError(f"{path}: file not found")
    import orjson

    with path.open("rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                errors.append(f"{path}:{lineno}: not valid JSON ({e})")
                continue
            try:
                tasks.append(parse_task(obj, f"{path}:{lineno}"))
            except ClawloopError as e:
                errors.append(str(e))
    return tasks, errors


def write_pool(path: str | Path, tasks: Iterable[Task]) -> int:
    """Write tasks as JSONL atomically; returns how many were written."""
    return write_jsonl(path, (t.to_json() for t in tasks))


def id_sample(tasks: Iterable[Task], n: int | None) -> list[Task]:
    """`n` tasks (None: all), the same ones every time for the same tasks (ids are content hashes,
    so sorting by id is a shuffle)."""
    return sorted(tasks, key=lambda t: t.id)[:n]


def manifest_path(pool: Path) -> Path:
    """`pool.jsonl` -> `pool.jsonl.manifest.json`: where `clawloop tasks synth` puts what made the pool."""
    return pool.with_name(pool.name + ".manifest.json")
