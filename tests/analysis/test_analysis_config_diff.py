"""The comparison page's config differences: what really differs between runs (a version, a broker key) is listed;
what differs only because every run has its own ports, paths and ids is counted, not listed."""
from __future__ import annotations

import types

from analysis.pages import config_differences


def _run(version: str, fallbehind: str, port: int, run_id: str):
    cluster = {
        "cluster_id": run_id, "version": version,
        "effective_config": {"master": {"haSlaveFallbehindMax": fallbehind, "listenPort": str(port),
                                        "storePathRootDir": f"/var/lib/rmq-chaos/work/{run_id}/master/store",
                                        "flushDiskType": "SYNC_FLUSH"}},
        "nodes": [{"name": "master", "pid": port * 3, "addr": f"127.0.0.1:{port}"}],
    }
    scenario = f"name: q\ncluster: {{version: '{version}'}}\nexpect:\n  - {{name: x, metric: lost, max: 0}}\n"
    return types.SimpleNamespace(run=types.SimpleNamespace(scenario_text=scenario, cluster=cluster))


def test_real_differences_are_listed_and_run_identity_is_only_counted():
    diff, identity, same = config_differences([_run("4.9.1", "268435456", 20001, "r1"),
                                               _run("4.9.3", "1048576", 20002, "r2")])
    assert [d["key"] for d in diff] == ["cluster.effective_config.master.haSlaveFallbehindMax", "cluster.version",
                                        "scenario.cluster.version"]
    assert diff[0]["values"] == ["268435456", "1048576"]
    assert identity == ["cluster.cluster_id", "cluster.effective_config.master.listenPort",
                        "cluster.effective_config.master.storePathRootDir", "cluster.nodes"]
    assert same == 2  # flushDiskType, scenario.name; `expect` is not config


def test_identical_runs_differ_only_by_identity():
    diff, identity, _ = config_differences([_run("4.9.1", "1", 20001, "r1"), _run("4.9.1", "1", 20002, "r2")])
    assert diff == [] and len(identity) == 4
