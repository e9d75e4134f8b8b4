"""Agent-grounded synthesis with the loop model, by hindsight relabeling or by the proposer.

`run.synthesize_grounded` dispatches; `stats` is what both report; `state_diff`/`state_probe`
(shipped into the sandbox) and `hindsight_text` serve hindsight."""
