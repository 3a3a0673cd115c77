"""Errors of the analysis job. `RunDirError` is bad input: its message is one line naming file, key and allowed values;
`list_at` refuses, in such a line, a key whose value must be a list."""
from __future__ import annotations


class AnalysisError(Exception):
    """Base of the analysis job's own errors."""


class RunDirError(AnalysisError, ValueError):
    """A run directory (or an argument naming one) that the job cannot accept. Nothing has been written."""


def list_at(data: object, source: object, key: str, items: str, error: type[ValueError] = ValueError) -> list:
    """The value of `key` in `source` as a list: none when absent (None); anything but a list is refused with
    `error("<source>: <key>: must be a list of <items>, got <type>")`."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise error(f"{source}: {key}: must be a list of {items}, got {type(data).__name__}")
    return data
