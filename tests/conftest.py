"""Shared fixtures. Tests never need a GPU and never touch the network."""
