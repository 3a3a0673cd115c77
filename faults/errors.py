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


class NodeNotBack(FaultError):
    """A node a revert or a timed restart starts again exited while starting, or was not ready within its bound:
    the cluster's failure, measured (`nodes_not_back`), not the harness's."""


def not_back(err: BaseException | None) -> bool:
    """`err`, or an error it was raised from (an undo op's failure is wrapped in `UndoError`), is a `NodeNotBack`."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, NodeNotBack):
            return True
        err, seen = err.__cause__ or err.__context__, seen + 1
    return False


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
