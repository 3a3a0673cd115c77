"""From evidence to findings: which mechanisms the lines name, ranked by how much of the evidence each explains."""
from __future__ import annotations

from dataclasses import dataclass

from harness.diagnose.evidence import Evidence, FileHits
from harness.diagnose.fingerprints import FINGERPRINTS
from harness.diagnose.mechanisms import MECHANISMS, Mechanism


@dataclass
class Finding:
    """One mechanism the evidence names: the lines it explains (`explained` of `total` evidence lines)."""

    mechanism: Mechanism
    explained: int
    total: int
    counts: dict[str, int]
    hits: list[tuple[str, FileHits]]

    @property
    def share(self) -> float:
        return self.explained / self.total if self.total else 0.0


SAMPLED = frozenset(f.id for f in FINGERPRINTS if f.sampled)
"""Fingerprints read from thread dumps. A flush is caught in msync now and then on any broker (the emulator's, on a
loaded machine, in 2 of 3 dumps during a partition that had nothing to do with its disk), so these rank after the
logged proof."""


def rank(evidence: Evidence) -> list[Finding]:
    """Every mechanism one of whose key fingerprints was found. First the one with the most key lines no other found
    mechanism explains (its own proof: the slave's `Read-only file system` for the stalled slave, the master's
    housekeeping expiry for the dropped one, where both explain the master's transfer timeouts), logged lines before
    thread-dump samples (`SAMPLED`), then the one explaining the most lines, then the one with more kinds of key
    lines; one whose key lines the ones above it explain is left out."""
    total = evidence.total()
    findings = []
    for mech in MECHANISMS:
        if not any(evidence.count(k) for k in mech.keys):
            continue
        counts = {fid: evidence.count(fid) for fid in mech.explains if evidence.count(fid)}
        hits = [(fid, h) for fid in mech.explains for h in evidence.hits.get(fid, {}).values()]
        findings.append(Finding(mech, sum(counts.values()), total, counts, hits))
    kinds = {f.mechanism.id: sum(1 for k in f.mechanism.keys if k in f.counts) for f in findings}
    own = {(f.mechanism.id, sampled): sum(n for k, n in f.counts.items() if k in f.mechanism.keys and (
        k in SAMPLED) == sampled and not any(k in g.mechanism.explains for g in findings if g is not f))
        for f in findings for sampled in (False, True)}
    findings.sort(key=lambda f: (-own[f.mechanism.id, False], -own[f.mechanism.id, True], -f.explained,
                                 -kinds[f.mechanism.id]))
    return _without_echoes(findings)


def _without_echoes(findings: list[Finding]) -> list[Finding]:
    """Leave out a finding all of whose key lines a finding ranked above it explains: it names nothing the evidence
    needs (the master's transfer timeouts name a stalled slave only where no dropped slave, dead master or the like
    explains them; the name server's removal of a master names its death only where no expiry explains it)."""
    kept: list[Finding] = []
    for f in findings:
        keys = [k for k in f.mechanism.keys if k in f.counts]
        if not kept or any(not any(k in g.mechanism.explains for g in kept) for k in keys):
            kept.append(f)
    return kept
