"""params.yaml `executor`: where the agent-free phases' sandbox episodes run (clawloop.core.executor)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

EXECUTORS = ("local", "ray")
"""Names `executor.kind` and `--executor` accept."""


class ExecutorParams(BaseModel):
    """params.yaml `executor`: where the sandbox episodes of the agent-free phases run.

    `executor: ray` is short for `executor: {kind: ray}`. Not a dvc.yaml param of any stage:
    where an episode runs does not change what it computes (tests/test_ray_executor.py), so
    moving a loop onto a cluster reuses the run cache."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = "local"
    """local: `sandbox.jobs` threads on this machine; ray: one Ray task per episode, one CPU each."""
    address: str | None = None
    """Ray cluster to join (host:port of `ray start --head`). null: $RAY_ADDRESS, else a cluster
    `ray start` runs on this machine, else a local one started for the phase and shut down after.
    "local": always start a fresh local one."""
    num_cpus: int | None = Field(None, ge=1)
    """CPUs of a local Ray cluster started here (null: `sandbox.jobs`). Ignored when joining."""
    max_retries: int = Field(3, ge=0)
    """Times an episode whose worker or node died is run again (Ray task retries)."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Custom Ray resources each episode requests besides its CPU, e.g. {sandbox: 1} to run
    episodes only on nodes started with `ray start --resources '{"sandbox": 8}'`."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"kind": data} if isinstance(data, str) else data
