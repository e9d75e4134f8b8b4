"""The loop's phases, one package each: synthesize, validate, train, evaluate, diagnose.
A phase imports the core, policy, config, artifacts and sandbox, never another phase; a stage
script that needs two (transfer) composes them (tests/test_import_cycles.py)."""
