"""The exceptions of the fault injectors, one base class: catch `FaultError` to catch them all."""
from __future__ import annotations


class FaultError(Exception):
    """Base of every error raised by `faults`."""


class FaultRefused(FaultError):
    """The target or the parameters are not acceptable (not a node the harness manages, bad params, ...)."""


class FaultConflict(FaultRefused):
    """Another open fault or resource already holds what this fault would change."""


class FaultUnavailable(FaultError):
    """The fault needs root, a tool or a kernel feature that this machine does not have."""


class FaultNotEffective(FaultError):
    """`verify` could not measure the effect within its deadline; `evidence` holds what was measured."""

    def __init__(self, message: str, evidence: dict | None = None) -> None:
        super().__init__(message)
        self.evidence = evidence or {}


class JournalError(FaultError):
    """The journal cannot be written (a full disk, a read-only or unwritable state directory): nothing it would
    have announced is done."""


class UndoError(FaultError):
    """An undo operation failed; `results` lists what ran before it."""

    def __init__(self, message: str, results: list[dict] | None = None) -> None:
        super().__init__(message)
        self.results = results or []


class ToolError(FaultError):
    """A system tool (mount, losetup, e2fsck, ...) exited with an unexpected status."""
