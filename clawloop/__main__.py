"""`python -m clawloop ...`: the same command line as the `clawloop` script."""

from clawloop.cli import main

main()
