"""The cluster state file: `<state dir>/clusters/<cluster-id>.json`, written by the harness when a cluster is up, so
`rmq-chaos fault ...` can find the nodes of a running cluster and act for the process that keeps it.

Format (one JSON object):
  {"cluster_id": str, "run_id": str, "backend": "local"|"compose", "owner": {"pid", "start", "boot"},
   "wall_ns": int, "nodes": [NodeTarget.to_json(), ...]}
`owner` is the process that keeps the cluster: faults applied through the CLI are journaled as its own, so they
stay while it lives and `cleanup` reverts them when it is gone."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from faults.errors import FaultRefused
from faults.journal import Journal, Owner
from faults.target import NodeTarget

CLUSTERS_DIR = "clusters"


@dataclass
class ClusterState:
    cluster_id: str
    run_id: str
    backend: str
    owner: Owner
    nodes: list[dict]
    wall_ns: int = 0

    def node(self, name: str) -> dict:
        for n in self.nodes:
            if n["name"] == name:
                return n
        raise FaultRefused(f"cluster {self.cluster_id}: no node {name!r} (nodes: {', '.join(self.node_names())})")

    def node_names(self) -> list[str]:
        return [n["name"] for n in self.nodes]

    def target(self, name: str, journal: Journal | None = None) -> NodeTarget:
        return NodeTarget.from_json(self.node(name), journal)


def state_path(state_dir: str | os.PathLike[str], cluster_id: str) -> Path:
    return Path(state_dir) / CLUSTERS_DIR / f"{cluster_id}.json"


def write_cluster_state(state_dir: str | os.PathLike[str], cluster_id: str, run_id: str, backend: str,
                        targets: list[NodeTarget], owner: Owner | None = None) -> Path:
    """Write (atomically) the state file of a cluster that is up."""
    path = state_path(state_dir, cluster_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"cluster_id": cluster_id, "run_id": run_id, "backend": backend,
            "owner": (owner or Owner.current()).to_json(), "wall_ns": time.time_ns(),
            "nodes": [t.to_json() for t in targets]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_cluster_state(state_dir: str | os.PathLike[str], cluster_id: str) -> ClusterState:
    path = state_path(state_dir, cluster_id)
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        known = ", ".join(list_clusters(state_dir)) or "none"
        raise FaultRefused(f"{path}: no such cluster state (clusters: {known})") from None
    except ValueError as e:
        raise FaultRefused(f"{path}: not valid JSON: {e}") from None
    return ClusterState(cluster_id=body["cluster_id"], run_id=body["run_id"], backend=body["backend"],
                        owner=Owner.from_json(body["owner"]), nodes=body["nodes"], wall_ns=body.get("wall_ns", 0))


def list_clusters(state_dir: str | os.PathLike[str]) -> list[str]:
    d = Path(state_dir) / CLUSTERS_DIR
    return sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []


def remove_cluster_state(state_dir: str | os.PathLike[str], cluster_id: str) -> bool:
    try:
        state_path(state_dir, cluster_id).unlink()
        return True
    except FileNotFoundError:
        return False
