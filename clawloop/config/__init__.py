"""The params.yaml schema, and the only place the loop's defaults live: pydantic models, no torch,
transformers or duckdb. `params.py` is the file as a whole (`load_params`); each section's models
live beside it, one module a phase (train, synthesis and its knobs, diagnosis, bootstrap's bases,
the decode engine, the policy backends, the executor), and every phase imports its config from here.
params.yaml states these defaults (tests/test_params.py checks the base model's)."""
