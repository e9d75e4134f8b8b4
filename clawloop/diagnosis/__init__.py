"""Diagnosis: DuckDB over trajectories → CapabilityReport (schema.py is import-light)."""
