"""Diagnosis: DuckDB over trajectories → CapabilityReport (schema.py is import-light).

`clawloop.phases.diagnose.diagnose.diagnose(...)` runs the whole phase; `DiagnosisParams` holds its
knobs (params.yaml `diagnosis.options`).
"""

from clawloop.config.diagnosis import DiagnosisParams

__all__ = ["DiagnosisParams"]
