"""Read-back coverage of one run: which queues of which node were not read completely (`readback/queues.json`,
architecture §5), and the words the loss check uses to say what it could not see. Pure Python (no Spark).

A queue that is not `complete` was read up to `read_to` (the next queue offset not read): an acknowledged send placed
at `read_to <= queue_offset < max_offset` in it (the node's own max offset, where it answered one) was not seen on that
node, so it is neither lost nor missing there, only unseen; past `max_offset` the node has no entry at all.
A node none of whose queues could be read at all (every entry `unreadable`) was not read: the metrics that need it
are unknown, as without a read-back. Without the file (a run made before it existed) every queue counts as read."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from analysis import contract as c


@dataclass(frozen=True)
class UnreadQueue:
    """A queue of a node that was not read completely, and from which offset on it was not seen."""

    node: str
    broker: str | None
    queue_id: int
    read_to: int
    max_offset: int | None
    rows: int
    status: str
    error: str | None
    response_code: int | None
    remark: str | None

    def text(self) -> str:
        """`slave broker-a queue 2 from offset 120 of 300 (partial; MQBrokerException code 1: <remark>)`."""
        top = f" of {self.max_offset}" if self.max_offset is not None else ""
        code = f" code {self.response_code}" if self.response_code is not None else ""
        return (f"{self.node} {self.broker or '?'} queue {self.queue_id} from offset {self.read_to}{top} "
                f"({self.status}; {self.error}{code}: {self.remark})")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Coverage:
    """The coverage entries of one run; `entries is None` when the run directory has no `readback/queues.json`."""

    entries: tuple[Mapping[str, Any], ...] | None = None

    @classmethod
    def of(cls, entries: Iterable[Mapping[str, Any]] | None) -> Coverage:
        return cls(None if entries is None else tuple(entries))

    @property
    def present(self) -> bool:
        return self.entries is not None

    @property
    def unread(self) -> list[UnreadQueue]:
        """The queues not read completely, in read order."""
        return [UnreadQueue(e["node"], e.get("broker"), e["queue_id"], e["read_to"], e.get("max_offset"), e["rows"],
                            e["status"], e.get("error"), e.get("response_code"), e.get("remark"))
                for e in self.entries or () if e["status"] != c.QUEUE_COMPLETE]

    def unread_of(self, node: str) -> list[UnreadQueue]:
        return [q for q in self.unread if q.node == node]

    @property
    def nodes_not_read(self) -> set[str]:
        """Nodes with coverage entries of which not one could be read (every entry `unreadable`)."""
        by_node: dict[str, list[str]] = {}
        for e in self.entries or ():
            by_node.setdefault(e["node"], []).append(e["status"])
        return {n for n, statuses in by_node.items() if all(s == c.QUEUE_UNREADABLE for s in statuses)}

    def node_note(self, node: str) -> str:
        """Why `node` counts as not read: its first error."""
        first = next((q for q in self.unread if q.node == node), None)
        why = f": {first.error}: {first.remark}" if first is not None else ""
        return f"the {node} could not be read back (no queue could be read{why})"


def describe_unread(queues: Iterable[UnreadQueue]) -> str:
    """`not read completely: <queue>; <queue>` for notes and warnings."""
    return "not read completely: " + "; ".join(q.text() for q in queues)
