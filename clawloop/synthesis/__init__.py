"""Task synthesis.

Shared by both routines (and by bootstrap's pretraining corpus): the skill families, `skills/`
(one generator module per family, built with `builder`, `content`, `words`, `templates`, the word
lists and phrasings in `data/`, steered by `knobs`) and `checker.py`, the verifier every
procedural task ships.
Routine A (procedural, skill-grounded), `routine_a/`: `curriculum.plan` (report -> quotas and
knobs), `procedural.synthesize` (plan -> tasks), `register` (the conversational rephrasing).
Routine B (agent-grounded), `routine_b/`: `hindsight`, `proposer`, `run` (dispatches to them).
"""
