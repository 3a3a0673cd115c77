"""A free port on 127.0.0.1 for the Spark daemons of tests/analysis/test_analysis_cluster.py (its `TwoWorkers`
reads the web UI ports the daemons actually bound from their logs)."""
from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
