"""Malformed scenario files for the error tests: each is the valid base with one thing wrong, and what the one-line
error must say (the line, the key path, and a word from the problem or the allowed values)."""
from __future__ import annotations

from dataclasses import dataclass

BASE = """\
name: base
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker:
    common:
      mappedFileSizeCommitLog: 4194304
load:
  clients:
    - {name: flood, users: 4, timeout: 3s}
phases:
  - name: healthy
    duration: 5s
  - name: outage
    duration: 5s
    faults:
      - {id: ro, kind: readonly_fs, target: slave}
expect:
  - {phase: healthy, outcome: SEND_OK, metric: share, min: 0.99}
"""


@dataclass(frozen=True)
class Case:
    id: str
    old: str
    new: str
    line: int | None
    key: str
    says: str

    def text(self) -> str:
        assert self.old in BASE, self.id
        return BASE.replace(self.old, self.new, 1)


CASES = [
    Case("unknown-top-key", "name: base", "name: base\nnmae: typo", 2, "nmae", "allowed: name, description"),
    Case("wrong-type-int", "  clients:", "  workers: many\n  clients:", 9, "load.workers", "expected an integer"),
    Case("duration-without-unit", "    duration: 5s\n  - name: outage", "    duration: 30\n  - name: outage",
         13, "phases[0].duration", "allowed: a number with a unit"),
    Case("duration-bad-unit", "    duration: 5s\n    faults", "    duration: 5 minutes\n    faults",
         15, "phases[1].duration", "Nms, Ns, Nm, Nh"),
    Case("duration-zero", "    duration: 5s\n  - name: outage", "    duration: 0s\n  - name: outage",
         13, "phases[0].duration", "above 0s"),
    Case("size-decimal-unit", "store_size: 64MiB", "store_size: 2GB", 4, "cluster.store_size", "NMiB"),
    Case("unknown-fault", "kind: readonly_fs", "kind: explode", 17, "phases[1].faults[0].kind",
         "unknown fault 'explode'; allowed:"),
    Case("impossible-target", "target: slave}", "target: slave2}", 17, "phases[1].faults[0].target",
         "allowed: namesrv, master, slave"),
    Case("store-fault-on-namesrv", "target: slave}", "target: namesrv}", 17, "phases[1].faults[0].target",
         "allowed: master, slave"),
    Case("unknown-backend", "  version:", "  backend: kubernetes\n  version:", 3, "cluster.backend",
         "allowed: local"),
    Case("version-as-number", 'version: "4.9.1"', "version: 4.9", 3, "cluster.version", "quoted string"),
    Case("version-unsupported", 'version: "4.9.1"', 'version: "3.2.6"', 3, "cluster.version", "allowed: 4.9.0"),
    Case("key-missing-in-5x", 'version: "4.9.1"\n  store_size: 64MiB\n  broker:\n',
         'version: "5.3.0"\n  store_size: 64MiB\n  broker:\n    master: {haSlaveFallbehindMax: 1048576}\n',
         6, "cluster.broker.master.haSlaveFallbehindMax", "cluster.allow_keys"),
    Case("config-typo", "      mappedFileSizeCommitLog: 4194304", "      mappedFileSizeCommitLog: 4194304\n"
         "      haSlaveFallBehindMax: 1048576", 8, "cluster.broker.common.haSlaveFallBehindMax",
         "did you mean haSlaveFallbehindMax"),
    Case("config-wrong-type", "      mappedFileSizeCommitLog: 4194304", "      mappedFileSizeCommitLog: big",
         7, "cluster.broker.common.mappedFileSizeCommitLog", "expected an integer"),
    Case("config-harness-key", "      mappedFileSizeCommitLog: 4194304", "      mappedFileSizeCommitLog: 4194304\n"
         "      listenPort: 10911", 8, "cluster.broker.common.listenPort", "set by the harness"),
    Case("config-role-on-slave", "      mappedFileSizeCommitLog: 4194304", "      mappedFileSizeCommitLog: 4194304\n"
         "    slave: {brokerRole: SYNC_MASTER}", 8, "cluster.broker.slave.brokerRole", "allowed: SLAVE"),
    Case("unknown-metric", "metric: share", "metric: speed", 19, "expect[0].metric", "latency_p99_ms"),
    Case("expect-unknown-phase", "{phase: healthy,", "{phase: nope,", 19, "expect[0].phase",
         "allowed: warmup, healthy, outage"),
    Case("expect-unknown-fault", "{phase: healthy, outcome: SEND_OK, metric: share, min: 0.99}",
         "{fault: rw, metric: recovery_s, max: 30}", 19, "expect[0].fault", "allowed: ro"),
    Case("duplicate-phase", "  - name: outage", "  - name: healthy", 14, "phases[1].name", "used twice"),
    Case("duplicate-yaml-key", "name: base", "name: base\nname: again", 2, "name", "duplicate key"),
    Case("yaml-syntax", "  - name: healthy", "  - name: [healthy", None, "", "YAML syntax error"),
    Case("closed-client-without-users", "{name: flood, users: 4, timeout: 3s}", "{name: flood, timeout: 3s}",
         10, "load.clients[0]", "needs users"),
    Case("unknown-profile", "timeout: 3s}", "timeout: 3s, profile: java-1.0}", 10, "load.clients[0].profile",
         "allowed: java-4.9.1"),
    Case("matrix-bad-path", "expect:", "matrix:\n  phases.nope.duration: [1s]\nexpect:", 19, "matrix",
         "no item 'nope'"),
    Case("matrix-empty-axis", "expect:", "matrix:\n  cluster.version: []\nexpect:", 19, "matrix.cluster.version",
         "non-empty list"),
    Case("matrix-bad-value", "expect:", 'matrix:\n  cluster.version: ["4.9.1", "9.9.9"]\nexpect:', 19,
         "cluster.version", "allowed: 4.9.0"),
    Case("store-too-small", "mappedFileSizeCommitLog: 4194304", "mappedFileSizeCommitLog: 67108864", 4,
         "cluster.store_size", "allowed: at least 144MiB"),
    Case("no-phases", "phases:\n  - name: healthy\n    duration: 5s\n  - name: outage\n    duration: 5s\n"
         "    faults:\n      - {id: ro, kind: readonly_fs, target: slave}\n", "phases: []\n", 11, "phases",
         "at least 1"),
    Case("fault-unknown-key", "target: slave}", "target: slave, revrt: never}", 17,
         "phases[1].faults[0].revrt", "allowed: id, kind, target, params, revert"),
    Case("fault-bad-revert", "target: slave}", "target: slave, revert: never}", 17,
         "phases[1].faults[0].revert", "allowed: phase_end, after_readback"),
    Case("not-a-mapping", BASE, "- just\n- a list\n", 1, "", "a scenario is a mapping"),
]
