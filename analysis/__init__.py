"""PySpark analysis of run directories: statistics, loss check, verdicts and the report.

Importing this package does not import pyspark; `analysis.contract` and `analysis.expectations` are light."""
