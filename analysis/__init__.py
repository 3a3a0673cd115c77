"""PySpark analysis of run directories: statistics, loss check, verdicts and the report.

Importing this package does not import pyspark; `analysis.contract` and `analysis.expectations` are light.
The job's entry is `analysis.job.analyze(paths, out=None, master=None, spark=None)`; see docs/analysis.md."""
from __future__ import annotations
