"""Errors of the analysis job. `RunDirError` is bad input: its message is one line naming file, key and allowed values."""
from __future__ import annotations


class AnalysisError(Exception):
    """Base of the analysis job's own errors."""


class RunDirError(AnalysisError, ValueError):
    """A run directory (or an argument naming one) that the job cannot accept. Nothing has been written."""
