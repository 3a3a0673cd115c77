"""`rmq-chaos diagnose`: field logs in, the mechanisms rmq-chaos reproduces out, each with a scenario file.

`scan(paths)` streams the files (`sources`) and finds the fingerprints (`fingerprints`) into `Evidence`;
`rank(evidence)` names the mechanisms (`mechanisms`) the evidence supports, most explained first; `reproduction`
and `write` make the scenario for a finding; `render` is the printed report. Details: docs/diagnose.md.
"""
from __future__ import annotations

from harness.diagnose.evidence import Evidence
from harness.diagnose.mechanisms import MECHANISMS, Mechanism
from harness.diagnose.ranking import Finding, rank
from harness.diagnose.render import render
from harness.diagnose.reproduction import Reproduction, reproduction, write
from harness.diagnose.scan import scan
from harness.diagnose.sources import Skipped

__all__ = ["MECHANISMS", "Evidence", "Finding", "Mechanism", "Reproduction", "Skipped", "rank", "render",
           "reproduction", "scan", "write"]
