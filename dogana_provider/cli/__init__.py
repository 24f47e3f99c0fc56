"""The `dogana` command: one module per command family, each built on common.py; main.py puts
the parser together and is the console script's entry point."""
