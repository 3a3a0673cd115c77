"""Part files: rows written atomically as `part-<worker>-<n>.parquet` (a hidden temp file, fsync, rename), so a
crash never leaves a half-written file under a part name; `PartWriter` batches rows."""
from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from analysis.contract.layout import DEFAULT_BATCH_ROWS, PART_NAME_RE, WORKER_NAME_RE

_part_lock = threading.Lock()
_part_counters: dict[tuple[str, str], itertools.count] = {}


def os_error_words(err: BaseException) -> str:
    """An OS error in lower-case words (`no space left on device`), from its errno where it has one (pyarrow's
    messages wrap the system's: "Error writing bytes to file. Detail: [errno 28] ...")."""
    if isinstance(err, OSError) and err.errno:
        return os.strerror(err.errno).lower()
    return (getattr(err, "strerror", None) or str(err) or type(err).__name__).lower()


def new_part_path(directory: str | os.PathLike[str], worker: str) -> Path:
    """A `part-<worker>-<n>.parquet` path in `directory` that no file and no earlier call of this process used.

    `worker` must be unique per writing process (e.g. the Locust worker id), and match `[A-Za-z0-9_.-]+`."""
    if not WORKER_NAME_RE.match(worker):
        raise ValueError(f"worker name {worker!r} must match {WORKER_NAME_RE.pattern}")
    d = Path(directory)
    with _part_lock:
        key = (str(d.resolve()), worker)
        if key not in _part_counters:
            taken = [int(m["n"]) for p in d.glob(f"part-{worker}-*.parquet")
                     if (m := PART_NAME_RE.match(p.name)) and m["worker"] == worker]
            _part_counters[key] = itertools.count(max(taken, default=-1) + 1)
        while True:
            path = d / f"part-{worker}-{next(_part_counters[key]):06d}.parquet"
            if not path.exists():
                return path


def to_table(rows: pa.Table | Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows (dicts or a table) as a table of exactly `schema`; raises on a missing required or unknown column."""
    if isinstance(rows, pa.Table):
        extra = set(rows.schema.names) - set(schema.names)
        if extra:
            raise ValueError(f"columns not in the schema: {sorted(extra)}")
        missing = [f.name for f in schema if f.name not in rows.schema.names]
        for name in missing:
            rows = rows.append_column(name, pa.nulls(rows.num_rows, schema.field(name).type))
        table = rows.select(schema.names).cast(schema)
    else:
        rows = list(rows)
        for row in rows:
            extra = set(row) - set(schema.names)
            if extra:
                raise ValueError(f"columns not in the schema: {sorted(extra)}")
        table = pa.Table.from_pylist(rows, schema=schema)
    table.validate(full=True)
    for f in schema:
        if not f.nullable and table.column(f.name).null_count:
            raise ValueError(f"column {f.name!r} must not be null")
    return table


def write_part(rows: pa.Table | Iterable[Mapping[str, Any]], directory: str | os.PathLike[str], worker: str,
               schema: pa.Schema) -> Path:
    """Write rows as one new part file, atomically (temp file, fsync, rename). Returns the part's path."""
    table = to_table(rows, schema)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    final = new_part_path(d, worker)
    tmp = d / f".{final.name}.{os.getpid()}.tmp"
    try:
        pq.write_table(table, tmp, compression="zstd")
        commit_file(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def commit_file(tmp: Path, final: Path) -> None:
    """Make a fully written `tmp` the file `final` durably: fsync it, rename it, fsync the directory."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, final)
    dfd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class PartWriter:
    """Buffers rows and writes a part file every `batch_rows` rows and on `flush()`/`close()`. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str], worker: str, schema: pa.Schema,
                 batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
        if not WORKER_NAME_RE.match(worker):
            raise ValueError(f"worker name {worker!r} must match {WORKER_NAME_RE.pattern}")
        self.directory = Path(directory)
        self.worker = worker
        self.schema = schema
        self.batch_rows = batch_rows
        self.parts: list[Path] = []
        self._rows: list[Mapping[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, row: Mapping[str, Any]) -> None:
        with self._lock:
            self._rows.append(row)
            full = len(self._rows) >= self.batch_rows
        if full:
            self.flush()

    def flush(self) -> Path | None:
        with self._lock:
            rows, self._rows = self._rows, []
            if not rows:
                return None
            path = write_part(rows, self.directory, self.worker, self.schema)
            self.parts.append(path)
            return path

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
