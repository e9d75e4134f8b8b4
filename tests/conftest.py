"""Shared fixtures. Tests never need a GPU and never touch the network."""

import os

# Under CPU contention OpenMP threads spin-waiting for a busy core made torch 4–6× slower
# (measured during SFT on this 2-core box); passive waiting costs nothing when the box is idle.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
