"""`readback/queues.json` (architecture §5): how far the read-back got in each (node, queue), written by the
harness and checked when the analysis reads it."""
from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from analysis.contract.layout import MAX_JSON_BYTES

QUEUE_COMPLETE, QUEUE_PARTIAL, QUEUE_UNREADABLE = "complete", "partial", "unreadable"
QUEUE_STATUSES = (QUEUE_COMPLETE, QUEUE_PARTIAL, QUEUE_UNREADABLE)
READBACK_QUEUES_VERSION = 1
_INT, _OPT_INT, _STR, _OPT_STR = "int", "int or null", "string", "string or null"
READBACK_QUEUE_FIELDS: dict[str, str] = {
    "node": _STR,             # "master" | "slave", as the read-back rows
    "broker": _OPT_STR,       # broker name
    "queue_id": _INT,
    "min_offset": _OPT_INT,   # GET_MIN_OFFSET before the read; null when it failed
    "max_offset": _OPT_INT,   # GET_MAX_OFFSET before the read; null when it failed
    "offsets_error": _OPT_STR,  # why min/max are null: "<outcome word>: <message>"
    "read_to": _INT,          # the next queue offset not read: last message read + 1, else min_offset (else 0)
    "rows": _INT,             # read-back rows written for this queue
    "status": _STR,           # complete | partial (rows read, then an error) | unreadable (an error, no row)
    "error": _OPT_STR,        # outcome word of what ended the read (MQBrokerException, ...); null when complete
    "response_code": _OPT_INT,  # the broker's response code, when the error has one
    "remark": _OPT_STR,       # the broker's remark, else the exception's message
}
"""One entry per (node, queue) the read-back attempted, in the order they were read. A queue is `complete` when the
pull reached the end of the queue (NO_NEW_MSG / OFFSET_ILLEGAL past the end). Analysis: an acknowledged send whose
(broker, queue_id, queue_offset) has `queue_offset >= read_to` on a queue that is not complete was not seen there."""


def check_readback_queue(entry: Any, where: str) -> dict[str, Any]:
    """One coverage entry checked against READBACK_QUEUE_FIELDS; raises ValueError naming the key and the allowed
    values."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: must be an object with keys {', '.join(READBACK_QUEUE_FIELDS)}")
    extra = sorted(set(entry) - set(READBACK_QUEUE_FIELDS))
    if extra:
        raise ValueError(f"{where}.{extra[0]}: unknown key; allowed: {', '.join(READBACK_QUEUE_FIELDS)}")
    out: dict[str, Any] = {}
    for key, kind in READBACK_QUEUE_FIELDS.items():
        v = entry.get(key)
        ok = {_INT: _is_int(v), _OPT_INT: v is None or _is_int(v), _STR: isinstance(v, str) and v != "",
              _OPT_STR: v is None or isinstance(v, str)}[kind]
        if not ok:
            raise ValueError(f"{where}.{key}: must be {'a non-empty ' if kind == _STR else ''}{kind}, got {v!r}")
        out[key] = v
    if out["status"] not in QUEUE_STATUSES:
        raise ValueError(f"{where}.status: {out['status']!r} is not one of: {', '.join(QUEUE_STATUSES)}")
    if out["read_to"] < 0 or out["rows"] < 0:
        raise ValueError(f"{where}: read_to and rows must be >= 0")
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def write_readback_queues(path: str | os.PathLike[str], run_id: str, topic: str | None,
                          queues: Iterable[Mapping[str, Any]]) -> Path:
    """Write `readback/queues.json` atomically (temp file, fsync, rename): `{"version", "run_id", "topic",
    "queues": [entry, ...]}`, every entry checked first."""
    entries = [check_readback_queue(q, f"queues[{i}]") for i, q in enumerate(queues)]
    data = {"version": READBACK_QUEUES_VERSION, "run_id": run_id, "topic": topic, "queues": entries}
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=1) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_readback_queues(path: str | os.PathLike[str]) -> list[dict[str, Any]] | None:
    """The entries of `readback/queues.json`; None when the file does not exist (a run made before it existed:
    every queue counts as read completely). Raises ValueError (one line naming file and key) on bad content."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_JSON_BYTES:
        raise ValueError(f"{p}: not a regular file of at most {MAX_JSON_BYTES} bytes; allowed: the file the "
                         "read-back wrote")
    try:
        data = json.loads(p.read_bytes().decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise ValueError(f"{p}: not UTF-8 text ({err.reason} at offset {err.start})") from None
    except RecursionError:
        raise ValueError(f"{p}: not JSON (nested too deeply)") from None
    except ValueError as err:
        raise ValueError(f"{p}: not JSON ({' '.join(str(err).split())[:200]})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("queues"), list):
        raise ValueError(f"{p}: queues: must be a list of objects with keys {', '.join(READBACK_QUEUE_FIELDS)}")
    return [check_readback_queue(q, f"{p}: queues[{i}]") for i, q in enumerate(data["queues"])]
