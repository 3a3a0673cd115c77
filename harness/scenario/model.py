"""The scenario file's schema, its top level: name, cluster, topic, load, warm-up, phases with their faults,
read-back, consumers, expectations.

Each section is a strict pydantic model (unknown keys refused; `cluster.py`, `workload.py`, `phases.py`);
`harness.scenario.load` reads a file, expands its `matrix:` and turns any error into one line naming file, line,
key and allowed values. The expectation items are `analysis.expectations.Expectation`, embedded as is. The
`consumers:` section (`harness.scenario.consumers`) names consumer groups; a fault may target `consumer:<group>` or
`<group>.c<i>`. `Scenario.resolved()` is what a run writes to its `scenario.yaml`: every default filled in,
durations and sizes written with their units, and each phase's `duration_s` (the figure the analysis reads).
"""
from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr, model_validator

from analysis.expectations import Expectation
from harness.scenario.cluster import ClusterSpec
from harness.scenario.consumers import ConsumersSection, is_consumer_target, target_problem
from harness.scenario.controller_keys import check_controller_targets
from harness.scenario.phases import MAX_EXPECTATIONS, MAX_PHASES, WARMUP_PHASE, FaultSpec, PhaseSpec, ReadbackSpec
from harness.scenario.schema import Duration, RunName, Strict, at
from harness.scenario.workload import LoadSection, TopicSpec


class Scenario(Strict):
    name: RunName
    description: str = ""
    variant: dict[str, str] = Field(default={}, description="matrix axes and the values of this run")
    cluster: ClusterSpec = ClusterSpec()
    topic: TopicSpec = TopicSpec()
    load: LoadSection = LoadSection()
    warmup: Duration = "5s"
    phases: list[PhaseSpec] = Field(min_length=1, max_length=MAX_PHASES)
    readback: ReadbackSpec = ReadbackSpec()
    consumers: ConsumersSection = ConsumersSection()
    expect: list[Expectation] = Field(default=[], max_length=MAX_EXPECTATIONS)
    _shift: int = PrivateAttr(default=0)

    def source_phase(self, index: int) -> int:
        """Index in the file's `phases` list of the resolved phase `index` (the warm-up phase is not in the file)."""
        return index - self._shift

    @model_validator(mode="after")
    def _resolve(self) -> Scenario:
        """Warm-up becomes the first phase; fault ids are filled in; phase expectations join the top-level list;
        every name an expectation or a phase uses must exist."""
        names = [p.name for p in self.phases]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise at(("phases", i, "name"), f"phase name {name!r} is used twice")
        if self.warmup > 0:
            if WARMUP_PHASE in names:
                raise at(("phases", names.index(WARMUP_PHASE), "name"),
                         f"{WARMUP_PHASE!r} is the warm-up's phase name; rename this phase or set warmup: 0s")
            self.phases.insert(0, PhaseSpec(name=WARMUP_PHASE, duration=f"{round(self.warmup * 1000)}ms"))
            self.warmup = 0.0
            shift = 1
        else:
            shift = 0
        self._shift = shift
        self._fill_fault_ids(shift)
        self._check_consumer_targets(shift)
        self._check_broker_targets(shift)
        check_controller_targets(self, shift)
        self._gather_expectations(shift)
        return self

    def _fill_fault_ids(self, shift: int) -> None:
        kinds = [f.kind for _, f in self.faults]
        seen: dict[str, tuple[int, int, str]] = {}
        for pi, phase in enumerate(self.phases):
            for fi, f in enumerate(phase.faults):
                if f.id is None:
                    same = sum(1 for k in seen.values() if k[2] == f.kind)
                    f.id = f.kind if kinds.count(f.kind) == 1 else f"{f.kind}-{same + 1}"
                if f.id in seen:
                    raise at(("phases", pi - shift, "faults", fi, "id"), f"fault id {f.id!r} is used twice")
                seen[f.id] = (pi, fi, f.kind)

    def _check_consumer_targets(self, shift: int) -> None:
        for pi, phase in enumerate(self.phases):
            for fi, f in enumerate(phase.faults):
                if is_consumer_target(f.target):
                    problem = target_problem(f.target, self.consumers)
                    if problem:
                        raise at(("phases", pi - shift, "faults", fi, "target"), problem)

    def _check_broker_targets(self, shift: int) -> None:
        """A broker target names a member of the topology: `<group>/<role>`, or a bare role with one group."""
        from harness.topology import Topology, TopologyError

        topology = Topology.of(self.cluster)
        for pi, phase in enumerate(self.phases):
            for fi, f in enumerate(phase.faults):
                try:
                    topology.check_target(f.target)
                except TopologyError as err:
                    raise at(("phases", pi - shift, "faults", fi, "target"), str(err)) from None

    def _gather_expectations(self, shift: int) -> None:
        from harness.topology import group_names

        phases = [p.name for p in self.phases]
        brokers = group_names(self.cluster)
        clients = [c.name for c in self.load.clients]
        faults = [f.id for _, f in self.faults]
        groups = [g.name for g in self.consumers.groups]
        moved: list[tuple[tuple[str | int, ...], Expectation]] = [(("expect", i), e) for i, e in enumerate(self.expect)]
        for pi, phase in enumerate(self.phases):
            for ei, e in enumerate(phase.expect):
                path = ("phases", pi - shift, "expect", ei)
                if e.phase not in (None, phase.name):
                    raise at(path + ("phase",), f"{e.phase!r} differs from the phase it is written in ({phase.name!r})")
                moved.append((path, e.model_copy(update={"phase": phase.name})))
            phase.expect = []
        for path, e in moved:
            for key, known in (("phase", phases), ("client", clients), ("fault", faults), ("group", groups),
                               ("broker", brokers)):
                value = getattr(e, key, None)
                if value is not None and value not in known:
                    raise at(path + (key,), f"{value!r} is not a {key} of this scenario; allowed: "
                                            f"{', '.join(map(str, known)) or 'none'}")
        labels: dict[str, tuple[str | int, ...]] = {}
        for path, e in moved:
            if e.label() in labels:
                raise at(path, f"two expectations are both named {e.label()!r}; give one a distinct 'name'")
            labels[e.label()] = path
        self.expect = [e for _, e in moved]

    @property
    def faults(self) -> list[tuple[int, FaultSpec]]:
        """Every fault with the index of its phase."""
        return [(i, f) for i, p in enumerate(self.phases) for f in p.faults]

    @property
    def total_s(self) -> float:
        return self.warmup + sum(p.duration for p in self.phases)

    def resolved(self) -> dict[str, Any]:
        """The scenario as a run records it: defaults filled in, warm-up as the first phase, phase expectations
        moved to the top-level list (with their phase), `matrix` replaced by `variant`."""
        data = self.model_dump(mode="json", exclude_none=True, exclude={"expect"})
        if not self.consumers.groups:
            data.pop("consumers")  # a scenario without consumers resolves as it did before they existed
        for phase in data["phases"]:
            phase.pop("expect", None)
        data["expect"] = [e.model_dump(mode="json", exclude_unset=True, exclude_none=True) for e in self.expect]
        return data
