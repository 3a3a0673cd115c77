"""master-slave-link-throttled through `--backend ssh` on the session's namespace hosts (name server n1, master n2,
slave n3, load n4), emulator: valid (every expectation held, exit 0), its `net_bandwidth` verified on the master's
host under the HA stream by its htb class's counters, and the HA link's own rate while throttled (the slave's
commitlog growing, from the per-second runtime figures in metrics/) never above the limit by more than 20 %, and
within 20 % of it over its busiest 3 s: the flood's sends are held to what the link carries. 22 s of phases; the
test about 75 s on a quiet machine.

The same figures of any run directory of the scenario (e.g. one of `benchmarks/on_netns_hosts.py`, either program):

    .venv/bin/python tests/hosts/test_ssh_link_throttled.py RUN_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "harness")]

import pytest  # noqa: E402
import test_ssh_seed  # noqa: E402
from runsupport import events, rows  # noqa: E402
from test_ssh_seed import assert_hosts_used, run_on_hosts  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.spark]
SCENARIO = "master-slave-link-throttled.yaml"
FAULT_ID = "slow-link"
TOLERANCE = 0.20
BUSIEST_S = 3.0
RUN_TIMEOUT_S = 1500
"""As the partition scenarios' runs: four hosts, the harness installed, the report's Spark, on a loaded machine."""


def fault_events(run_dir: Path) -> dict[tuple[str, str], dict]:
    return {(e["action"], e["status"]): e for e in events(run_dir) if e["event"] == "fault"
            and e["fault_id"] == FAULT_ID}


def busiest_rate(samples: list[tuple[float, int]], span_s: float) -> float:
    """The highest growth per second over `span_s` (from each sample to the first one at least that much later)."""
    best = 0.0
    for i, (ta, oa) in enumerate(samples):
        later = [(tb, ob) for tb, ob in samples[i + 1:] if tb - ta >= span_s - 0.1]
        if later:
            best = max(best, (later[0][1] - oa) / (later[0][0] - ta))
    return best


def measure(run_dir: Path) -> dict:
    """What the throttle did: the limit, its verify (the class's and the probe's rates against it), and the HA
    link's rate from a second after the verify to the revert: how fast the slave's commitlog grew (metrics/, the
    slave's per-second samples), over the whole window and over its busiest `BUSIEST_S` (a broker that stalls for a
    second on a loaded machine sends less than the link would carry meanwhile)."""
    fault = fault_events(run_dir)
    limit = fault[("apply", "started")]["params"]["rate_bps"]
    peer = fault[("verify", "ok")]["evidence"]["peers"]["slave"]
    start, end = fault[("verify", "ok")]["wall_ns"] + 1_000_000_000, fault[("revert", "started")]["wall_ns"]
    samples = sorted((r["ts_ns"] / 1e9, r["commitlog_max_offset"]) for r in rows(run_dir / "metrics")
                     if r["node"] == "slave" and r["commitlog_max_offset"] is not None and start <= r["ts_ns"] <= end)
    (t0, o0), (t1, o1) = samples[0], samples[-1]
    rate = (o1 - o0) / (t1 - t0)
    return {"limit_bps": limit, "verify_class_ratio": peer["class_ratio"], "verify_probe_ratio": peer["probe_ratio"],
            "verify_shaping": peer["shaping"], "ha_rate_bps": round(rate), "ha_ratio": round(rate / limit, 3),
            "ha_busiest_ratio": round(busiest_rate(samples, BUSIEST_S) / limit, 3), "ha_window_s": round(t1 - t0, 1),
            "verified_on": fault[("verify", "ok")].get("host")}


@pytest.mark.long
@pytest.mark.timeout(RUN_TIMEOUT_S + 300)
def test_the_throttled_link_holds_on_hosts(cluster, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(test_ssh_seed, "RUN_TIMEOUT_S", RUN_TIMEOUT_S)
    code, run_dir, err = run_on_hosts(cluster, SCENARIO, tmp_path)
    assert code == 0, err[-3000:]
    assert_hosts_used(run_dir)
    fault = fault_events(run_dir)
    assert {("apply", "ok"), ("verify", "ok"), ("revert", "ok")} <= set(fault), fault
    figures = measure(run_dir)
    print(f"{SCENARIO}: {json.dumps(figures)}")
    assert figures["verified_on"] == "n2", figures  # on the master's host
    assert abs(figures["verify_class_ratio"] - 1) <= TOLERANCE and figures["verify_shaping"], figures
    assert figures["ha_window_s"] >= BUSIEST_S, figures  # the slave's samples span the throttle
    assert figures["ha_ratio"] <= 1 + TOLERANCE, figures  # the link never carried more than the limit
    assert abs(figures["ha_busiest_ratio"] - 1) <= TOLERANCE, figures  # and, while the flood kept up, the limit


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1])), indent=1))
