"""Routine A: procedural synthesis steered by the curriculum (`curriculum.plan` -> `procedural.synthesize`)."""
