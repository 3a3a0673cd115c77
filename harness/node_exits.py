"""Nodes whose process ended other than through the harness's stop (a crash, the OOM killer, a `kill` fault), found
when a run fails: the words for the run's error and one `node_exit` event each."""
from __future__ import annotations

from typing import Any

from harness.rundir import RunDir


def exited(node: Any) -> bool:
    """The node's process ended other than through the harness's stop (never raises)."""
    try:
        return bool(node.exit_status())
    except Exception:  # noqa: BLE001 - a diagnostic must not hide the run's own error
        return False


def node_exits(rd: RunDir, backend: Any) -> list[str]:
    """Nodes whose process ended other than through the harness's stop (a crash, the OOM killer, a `kill` fault):
    one `node_exit` event each, and words for the run's error, so a failed read-back says which broker died."""
    found = []
    for name, node in getattr(backend, "nodes", {}).items():
        try:
            status = node.exit_status()
            if not status:
                continue
            rd.event("node_exit", node=name, status=status, log=getattr(node, "log_path", None))
        except Exception:  # noqa: BLE001 - a diagnostic must not hide the run's own error
            continue
        found.append(f"{name} {status}")
    return found
