"""The small core every phase stands on: a task and its sandboxed environment (tasks/), the agent
that acts in it turn by turn (agent/), the episode record (trajectory), and the leaf utilities
(io, progress, stats, paired tests, the executor). It imports config, policy and sandbox, never a
phase (tests/test_import_cycles.py)."""
