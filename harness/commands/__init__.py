"""Sub-commands of `rmq-chaos`, one module each (see `harness/cli.py`)."""
