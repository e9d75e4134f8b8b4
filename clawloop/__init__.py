"""clawloop: a teacher-free, self-improving training loop for shell agents."""

__version__ = "0.1.0"
