"""DVC stage scripts: thin recipes over the clawloop library (`python -m stages.NAME`)."""
