"""The OS resources of a node on the local backend, each journaled with its undo before it is made (so one
`rmq-chaos cleanup` removes what a dead run left): a loop-mounted ext4 store, cgroups, processes spawned into those
cgroups (and a node made of one such process, stoppable and startable), a swap file, and the HA relay process.
See docs/faults.md for the API."""
from __future__ import annotations

from harness.resources.cgroups import DEFAULT_CONTROLLERS, NodeCgroups
from harness.resources.loop_store import LoopStore
from harness.resources.node_process import ProcessNode
from harness.resources.processes import ManagedProcess, spawn
from harness.resources.relay_process import RelayProcess
from harness.resources.swap import SwapFile

__all__ = ["DEFAULT_CONTROLLERS", "LoopStore", "ManagedProcess", "NodeCgroups", "ProcessNode", "RelayProcess",
           "SwapFile", "spawn"]
