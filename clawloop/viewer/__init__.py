"""Browsable trajectories: every episode's instruction, commands, outputs and verdict, offline.

`write_viewer` turns evaluation output (rollout Parquet or episodes.jsonl) into a static page;
`clawloop view DIR` and `clawloop report` call it.
"""

from clawloop.viewer.load import load_episodes
from clawloop.viewer.write import expand_sources, write_viewer

__all__ = ["expand_sources", "load_episodes", "write_viewer"]
