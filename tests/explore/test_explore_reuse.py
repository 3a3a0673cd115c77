"""`explore.cluster: reuse` (harness/cluster_reuse.py): the holder's refusals (nothing held, a node not running,
another cluster asked for) and its lending, with a stand-in backend. End to end, on the emulator, in
tests/explore/test_explore_run.py (scenarios/explore/pair-4.9.1.yaml reuses its cluster); across hosts and through
compose in tests/hosts/test_ssh_explore.py and tests/compose/test_compose_explore.py."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness.cluster_reuse import FRESH, REUSED, HeldCluster
from harness.scenario import load_scenarios

REPO = Path(__file__).resolve().parents[2]

class _Signal(BaseException):
    """What the runner's signal handler raises (`RunInterrupted` is a BaseException too)."""


class _Backend(SimpleNamespace):
    """What the holder asks of a backend: a stand-in whose health is set by the test."""

    def __init__(self, scenario, healthy: str | None = None) -> None:
        super().__init__(scenario=scenario, cluster_id="run-1", name="local", up_ns=1, downs=0, healthy=healthy,
                         mode=SimpleNamespace(stop_samplers=lambda: None, start_samplers=lambda: None))

    def use_relay(self) -> bool:
        return False

    def reattach(self, rd) -> None:
        self.rd = rd

    def prove_healthy(self, say) -> dict:
        if self.healthy == "signal":
            raise _Signal("SIGINT")
        if self.healthy:
            raise RuntimeError(self.healthy)
        return {"cluster_id": self.cluster_id}

    def node_addrs(self) -> dict:
        return {}

    def down(self) -> None:
        self.downs += 1


def _scenario(**cluster):
    (s,) = load_scenarios(REPO / "scenarios" / "slave-frozen.yaml")
    return s.model_copy(update={"cluster": s.cluster.model_copy(update=cluster)}) if cluster else s


def test_the_holder_lends_only_a_fitting_healthy_cluster_and_takes_the_rest_down() -> None:
    said: list[str] = []
    rd = SimpleNamespace(write_cluster=lambda info: None, event=lambda *a, **k: {})
    held = HeldCluster()
    assert held.lend(_scenario(), rd, said.append) is None and held.note == FRESH  # nothing held yet

    sick = _Backend(_scenario(), healthy="slave not running")
    held.take(sick)
    assert held.lend(_scenario(), rd, said.append) is None
    assert held.note == "fresh: not healthy: slave not running" and sick.downs == 1

    other = _Backend(_scenario())
    held.take(other)
    assert held.lend(_scenario(version="4.9.3"), rd, said.append) is None
    assert held.note == "fresh: this run asks for another cluster" and other.downs == 1

    good = _Backend(_scenario())
    held.take(good)
    assert held.lend(_scenario(), rd, said.append) is good and held.note == REUSED and good.downs == 0
    held.take(good)
    held.down(said.append)
    assert good.downs == 1 and held.backend is None


def test_a_signal_while_proving_takes_the_held_cluster_down_and_goes_on_up() -> None:
    """Ctrl-C during the proof (it may wait up to ready_timeout): the run ends, and the cluster is not left behind."""
    rd = SimpleNamespace(write_cluster=lambda info: None, event=lambda *a, **k: {})
    held = HeldCluster()
    backend = _Backend(_scenario(), healthy="signal")
    held.take(backend)
    try:
        held.lend(_scenario(), rd, lambda _: None)
    except _Signal:
        pass
    else:
        raise AssertionError("the signal was swallowed")
    assert backend.downs == 1 and held.backend is None
