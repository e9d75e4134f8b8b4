"""Phrasing templates, one JSON file per skill family (package data)."""
