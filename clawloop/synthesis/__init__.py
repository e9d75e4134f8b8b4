"""Task synthesis.

Routine A (procedural, skill-grounded): `skills/` (one generator module per family),
`curriculum.plan` (report -> quotas and knobs), `procedural.synthesize` (plan -> tasks).
Routine B (agent-grounded): `hindsight`, `proposer`, `routine_b`.
"""
