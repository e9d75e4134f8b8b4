"""Procedural synthesis: a steering plan in, tasks out (`generate.synthesize`; `register` rephrases a share)."""
