"""Tasks: the frozen unit that synthesis makes, validation filters, training and evaluation use."""

from clawloop.core.tasks.task import FileSpec, Limits, Provenance, Solution, Task, Verifier

__all__ = ["FileSpec", "Limits", "Provenance", "Solution", "Task", "Verifier"]
