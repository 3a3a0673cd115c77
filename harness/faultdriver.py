"""Applying, verifying and reverting a run's faults through `faults/`, and remembering which are in effect so a
phase end, the read-back's end and the run's `finally` ("revert all", newest first) each undo exactly theirs.
Every step is a `fault` event in `events.jsonl` (the fault classes emit them) and a journal entry (so a crash is
undone by `rmq-chaos cleanup`)."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.scenario import FaultSpec


@dataclass
class ActiveFault:
    spec: FaultSpec
    fault: Any  # faults.base.Fault


class FaultDriver:
    def __init__(self, targets: Mapping[str, Any], journal: Any, emit: Callable[[dict], None],
                 resolve: Callable[[str], str] | None = None) -> None:
        self.targets = targets
        self.resolve = resolve
        """controller mode: the node holding a role (`master`, `slave`) when a fault on it is applied"""
        self.journal = journal
        self.emit = emit
        self.active: list[ActiveFault] = []
        self._applying: FaultSpec | None = None

    def acts_on(self, worker: str) -> bool:
        """Whether a fault being applied or in effect targets this consumer process (`<group>.c<i>`, a restart's
        `.r<n>` suffix ignored) or its group (`consumer:<group>`): its death is then the scenario's doing."""
        instance = re.sub(r"\.r\d+$", "", worker)
        group = instance.rpartition(".c")[0]
        specs = [a.spec for a in self.active] + ([self._applying] if self._applying is not None else [])
        return any(sp.target in (instance, f"consumer:{group}") for sp in specs)

    def nodes_of(self, specs: list[FaultSpec]) -> list[str]:
        """The node each fault acts on, every role resolved before any fault of the list is applied: a phase's
        faults all act on the holders at its start (a killed controller leader cannot say who the master was)."""
        return [self.resolve(s.target) if self.resolve is not None else s.target for s in specs]

    def apply(self, spec: FaultSpec, node: str | None = None) -> dict[str, Any]:
        """Apply and verify one fault (on `node`, default: its target resolved now); on a verify failure the fault
        stays active (reverted by the caller's revert-all) and the error propagates."""
        from faults.registry import fault_class

        if node is None:
            node = self.nodes_of([spec])[0]
        target = self.targets[node]
        emit = self.emit
        if node != spec.target:  # the event names the scenario's target (the role) and the node that held it
            def emit(event: dict, node: str = node) -> None:
                self.emit({**event, "target": spec.target, "node": node})
        runner = getattr(target.control, "fault_runner", None)
        if runner is not None:  # a node on another host: its agent runs the fault there
            fault = runner(spec, emit)
        else:
            fault = fault_class(spec.kind)(target, spec.params, journal=self.journal, emit=emit,
                                           fault_id=spec.id)
        self._applying = spec
        try:
            evidence = fault.apply()
            self.active.append(ActiveFault(spec, fault))
        finally:
            self._applying = None
        evidence = {"apply": evidence, "verify": fault.verify()}
        return evidence

    def revert(self, when: str | None = None) -> None:
        """Revert (newest first) the active faults whose `revert` is `when` (all when None). Raises the first error
        after trying every one."""
        first: BaseException | None = None
        for item in reversed(list(self.active)):
            if when is not None and item.spec.revert != when:
                continue
            try:
                item.fault.revert()
                self.active.remove(item)
            except Exception as err:  # noqa: BLE001 - try every fault, report the first failure
                first = first or err
        if first is not None:
            raise first

    @property
    def active_ids(self) -> list[str]:
        return [a.spec.id or a.spec.kind for a in self.active]
