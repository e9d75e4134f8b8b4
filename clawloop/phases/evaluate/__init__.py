"""The evaluate phase: held-out suites (greedy and sampled), the gate, promotion, and `clawloop eval`."""
