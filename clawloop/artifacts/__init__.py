"""What passes between stages: the files of `runs/`, their schemas, and how a stage reads and
writes them (atomically). Phases import it; it imports only the core and config."""
