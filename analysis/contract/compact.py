"""Compaction of a run directory's part files once every writer has stopped (issue 28): a run writes a part per
writer every second or batch (crash-safe: each part is whole or absent), so a ten-minute run leaves thousands of
small files, and the analysis pays per file. `compact_dir` merges a directory's parts, in name order, into
`part-compacted-<n>.parquet` files of up to `FILE_ROWS` rows, each written as a part is (temporary name, fsync,
rename), whose footer names its sources (`rmq_chaos.compacted_from`); only then are the sources removed. A crash at
any moment leaves either the sources alone, or a compacted file and some of its sources: `superseded` names the
sources a compacted file already holds, and the analysis reads those from the compacted file only. Rows, their
order within a source and their values are unchanged (conformed to the contract's schema: columns it has and an
older part lacks are nulls). A part that cannot be read as the contract says stays as it is, for the analysis to
report."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from analysis.contract.layout import PART_GLOB
from analysis.contract.parts import commit_file, new_part_path
from analysis.contract.schemas import schema_problem

COMPACTED_WORKER = "compacted"
SOURCES_KEY = b"rmq_chaos.compacted_from"
FILE_ROWS = 4_000_000
ROW_GROUP_ROWS = 500_000


@dataclass(frozen=True)
class Compacted:
    directory: Path
    sources: int
    files: list[Path]
    rows: int


COMPACTED_RE = re.compile(rf"^part-{COMPACTED_WORKER}-\d+\.parquet$")
"""A compacted file's name (a consumer group may be called `compacted-x`: its parts are `part-compacted-x.c0-...`)."""


def is_compacted(path: Path) -> bool:
    return COMPACTED_RE.match(path.name) is not None


def superseded(directory: Path) -> set[str]:
    """Names of parts a compacted file of `directory` holds (left only by a compaction cut short)."""
    out: set[str] = set()
    for path in directory.glob(f"part-{COMPACTED_WORKER}-*.parquet"):
        if not is_compacted(path):
            continue
        try:
            names = json.loads((pq.read_schema(path).metadata or {}).get(SOURCES_KEY, b"[]"))
        except (OSError, pa.ArrowException, ValueError):  # a footer not ours (a hostile run directory): no sources
            continue
        if isinstance(names, list):
            out.update(n for n in names if isinstance(n, str))
    return out


def _fits(path: Path, schema: pa.Schema) -> int | None:
    """The part's row count when its footer reads and its columns have the contract's types, else None."""
    try:
        meta = pq.read_metadata(path)
        file_schema = meta.schema.to_arrow_schema()
    except (OSError, pa.ArrowException):
        return None
    return meta.num_rows if schema_problem(file_schema, schema) is None else None


def _conformed(path: Path, schema: pa.Schema) -> pa.Table:
    """The part's rows in the contract's columns (one an older part lacks: nulls)."""
    table = pq.read_table(path)
    columns = [table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def compact_dir(directory: Path, schema: pa.Schema) -> Compacted | None:
    """Merge the parts of `directory` (not already compacted) into compacted files; None when there are fewer
    than two. Raises OSError (ENOSPC, ...) or ArrowException with every source still there and no temporary file
    left (compacted files finished before stay: they and their sources are read once)."""
    if not directory.is_dir():
        return None
    done = superseded(directory)
    sources = [p for p in sorted(directory.glob(PART_GLOB)) if not is_compacted(p) and p.is_file()]
    for p in [p for p in sources if p.name in done]:  # a compaction cut short: already held, remove them
        p.unlink(missing_ok=True)
    sized = [(p, n) for p in sources if p.name not in done and (n := _fits(p, schema)) is not None]
    if len(sized) < 2:
        return None
    plan: list[list[Path]] = [[]]
    rows = 0
    for path, n in sized:  # files of up to FILE_ROWS rows, sources in name order
        if plan[-1] and rows + n > FILE_ROWS:
            plan.append([])
            rows = 0
        plan[-1].append(path)
        rows += n
    schema = schema.remove_metadata()
    files = []
    for group in plan:
        files.append(_write(directory, schema, group))
        for path in group:
            path.unlink()
    return Compacted(directory, len(sized), files, sum(n for _, n in sized))


def _write(directory: Path, schema: pa.Schema, group: list[Path]) -> Path:
    """One compacted file of `group`'s rows, row groups of about ROW_GROUP_ROWS, its footer naming them."""
    final = new_part_path(directory, COMPACTED_WORKER)
    tmp = directory / f".{final.name}.{os.getpid()}.tmp"
    schema = schema.with_metadata({SOURCES_KEY: json.dumps([p.name for p in group]).encode()})
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            pending: list[pa.Table] = []
            rows = 0
            for path in group:
                pending.append(_conformed(path, schema))
                rows += pending[-1].num_rows
                if rows >= ROW_GROUP_ROWS:
                    writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
                    pending, rows = [], 0
            if pending:
                writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
        commit_file(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def compact_run(root: Path, schemas: dict[str, pa.Schema]) -> list[Compacted]:
    """Compact every part directory of a run (`schemas`: its path relative to `root` -> the contract's schema)."""
    return [done for sub, schema in schemas.items() if (done := compact_dir(root / sub, schema)) is not None]
