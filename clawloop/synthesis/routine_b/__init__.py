"""Routine B: agent-grounded synthesis with the loop model, by hindsight relabeling or by the proposer.

`run.synthesize_routine_b` dispatches; `conditioning` is what both variants read from the report;
`state_diff`/`state_probe` (shipped into the sandbox) and `hindsight_text` serve hindsight."""
