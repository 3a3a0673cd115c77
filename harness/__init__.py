"""The harness: scenario files, backends, the run timeline, collectors, the run directory and the CLI."""
