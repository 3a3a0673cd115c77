"""One cluster kept across the runs of an exploration (`explore.cluster: reuse`), where the harness can prove it
healthy again; else a fresh one, as `rmq-chaos run` makes for every run.

After a run that ended well (completed, every fault reverted, nothing failed while winding down) the runner hands
its backend to a `HeldCluster` instead of taking it down (its role samplers stopped). The next run borrows it: the
held cluster is lent only when the run asks for the same cluster (the scenario's `cluster:` section and the HA relay
it needs) and passes `ClusterBackend.prove_healthy`: every node's process running and ready, the mode's readiness
again (the topic's route, a probe SEND_OK, every slave caught up with its master or back in its SyncStateSet) and
the effective config still the one asked. Any doubt takes it down and the run stands up a fresh one, saying why
(`note`: `reused`, `fresh`, or `fresh: <why>`). The read-back and the loss checks count the run's own keys (each
key starts with its run id), so the messages earlier runs left in the stores are not this run's.

The explorer takes the held cluster down when it ends, however it ends."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.backends.base import needs_relay
from harness.backends.errors import ClusterError
from harness.rundir import RunDir
from harness.scenario import Scenario

REUSED, FRESH = "reused", "fresh"


class HeldCluster:
    def __init__(self) -> None:
        self.backend: Any = None
        self.note = FRESH
        """What the last run got: `reused`, `fresh`, or `fresh: <why the held one was not lent>`."""

    def take(self, backend: Any) -> None:
        """Keep `backend` (up and healthy as far as its run knows) for the next run."""
        self.backend = backend
        backend.mode.stop_samplers()

    def lend(self, scenario: Scenario, rd: RunDir, say: Callable[[str], None]) -> Any:
        """The held backend, pointed at `rd` and proven healthy, with its cluster.json and events written for the
        run; None when nothing is held or it cannot be lent (then it is taken down and `note` says why)."""
        backend, self.backend = self.backend, None
        if backend is None:
            self.note = FRESH
            return None
        why = self._misfit(scenario, backend)
        if why is None:
            backend.scenario = scenario
            backend.reattach(rd)
            say(f"cluster: proving the cluster of {backend.cluster_id} healthy again")
            try:
                info = backend.prove_healthy(say)
            except Exception as err:  # noqa: BLE001 - any doubt means a fresh cluster
                why = f"not healthy: {err}"
            except BaseException:  # a signal while proving: the run ends, and the cluster is not left behind
                self._down(backend, say)
                raise
        if why is not None:
            self.note = f"{FRESH}: {why}"
            say(f"cluster: a fresh one ({why})")
            self._down(backend, say)
            return None
        try:
            rd.write_cluster({**info, "reused_from": backend.cluster_id})
            rd.event("cluster_up", backend=backend.name, nodes=backend.node_addrs(), reused=backend.cluster_id,
                     started_ns=backend.up_ns)  # the nodes' start: their logs' first lines are from then
            backend.mode.start_samplers()
            rd.event("cluster_ready", backend=backend.name, nodes=backend.node_addrs(), reused=backend.cluster_id)
        except BaseException:  # the run cannot use it: it is not left behind either
            self._down(backend, say)
            raise
        self.note = REUSED
        say(f"cluster ready: the cluster of {backend.cluster_id}, reused")
        return backend

    @staticmethod
    def _misfit(scenario: Scenario, backend: Any) -> str | None:
        """Why the held cluster is not the one `scenario` asks for (its `cluster:` section, its HA relay), or None."""
        if scenario.cluster.model_dump(mode="json") != backend.scenario.cluster.model_dump(mode="json"):
            return "this run asks for another cluster"
        wanted = needs_relay(scenario)
        if wanted != backend.use_relay():
            return "this run needs the HA relay" if wanted else "the held cluster has an HA relay"
        return None

    def down(self, say: Callable[[str], None] = print) -> None:
        """Take the held cluster down (nothing when none is held)."""
        backend, self.backend = self.backend, None
        if backend is not None:
            self._down(backend, say)

    @staticmethod
    def _down(backend: Any, say: Callable[[str], None]) -> None:
        say(f"cluster: taking down the cluster of {backend.cluster_id}")
        try:
            backend.down()
        except ClusterError as err:
            say(f"cluster down failed: {err} (rmq-chaos cleanup undoes what is left)")
