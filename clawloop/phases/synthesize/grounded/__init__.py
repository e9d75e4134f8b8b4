"""Agent-grounded synthesis with the loop model, by hindsight relabeling or by the proposer.

`run.synthesize_grounded` dispatches; `attempts` is what both are asked for and report; `state_diff`/`state_probe`
(shipped into the sandbox) and `hindsight_text` serve hindsight."""
