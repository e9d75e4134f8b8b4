"""Task synthesis: the capability report in, the next pool out.

`pool.py` builds a pool (the budget split over the routines, the procedural refill); `steering.py`
turns the report into quotas, knobs and targets; `config.py` is params.yaml's `synthesis` section.
Procedural synthesis, `procedural/`: `generate.synthesize` (plan -> tasks), `register` (the
conversational rephrasing). Agent-grounded synthesis with the loop model, `grounded/`:
`hindsight`, `proposer`, `run` (dispatches to them).
Shared by both (and by bootstrap's pretraining corpus): the skill families, `skills/` (one
generator module per family, built with `builder`, `content`, `words`, `templates`, the word lists
and phrasings in `data/`, steered by `knobs`) and `checker.py`, the verifier every procedural task
ships.
"""
