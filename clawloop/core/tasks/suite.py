"""A suite: the tasks of one Harbor directory or JSONL pool, read leniently.

`load_suite` turns a task that fails to load into an item with its error (naming the task and
the field); the rest still runs. Other benchmark formats load through
`clawloop.core.tasks.formats.load_suite_any`, which builds the same `Suite`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clawloop.core.tasks.harbor import find_task_dirs, is_task_dir, load_harbor_task
from clawloop.core.tasks.harbor_export import task_name
from clawloop.core.tasks.pool import read_pool_lenient
from clawloop.core.tasks.task import Task
from clawloop.errors import ClawloopError


@dataclass
class SuiteItem:
    """One task of a suite, or the error that kept it from loading (task is None)."""

    suite: str
    name: str
    task: Task | None
    error: str | None = None


@dataclass
class Suite:
    name: str
    path: Path
    items: list[SuiteItem] = field(default_factory=list)

    @property
    def tasks(self) -> list[Task]:
        return [i.task for i in self.items if i.task is not None]


def load_suite(path: str | Path, name: str | None = None) -> Suite:
    """A directory of Harbor tasks, one Harbor task directory, or a JSONL pool."""
    path = Path(path)
    if path.is_file():
        suite = Suite(name or path.stem, path)
        tasks, errors = read_pool_lenient(path)
        suite.items += [SuiteItem(suite.name, task_name(t), t) for t in tasks]
        for err in errors:
            loc = err.split(": ", 1)[0]
            suite.items.append(SuiteItem(suite.name, f"line {loc.rsplit(':', 1)[-1]}", None, err))
        return suite
    if not path.is_dir():
        raise ClawloopError(f"{path}: no such suite (a task directory, a directory of tasks, or a .jsonl pool)")
    single = is_task_dir(path)
    suite = Suite(name or (path.resolve().parent.name if single else path.resolve().name), path)
    dirs = find_task_dirs(path)
    if not dirs:
        raise ClawloopError(f"{path}: no Harbor tasks (task.toml) found")
    for d in dirs:
        try:
            suite.items.append(SuiteItem(suite.name, d.name, load_harbor_task(d, source=suite.name)))
        except ClawloopError as e:
            suite.items.append(SuiteItem(suite.name, d.name, None, str(e)))
    return suite
