"""Isolated workspaces for running untrusted shell commands. Knows nothing of clawloop."""
