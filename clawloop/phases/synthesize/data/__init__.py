"""Word lists and phrasing templates of the procedural generators (package data, no code)."""
