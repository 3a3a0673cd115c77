"""Helpers of the load tests: read the rows a run wrote, check that every worker's seqs have no gap, poll for a
condition with a deadline."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def read_rows(run_dir: Path) -> pa.Table:
    parts = sorted((run_dir / "requests").glob("part-*.parquet"))
    assert parts, f"no part files in {run_dir / 'requests'}"
    return pa.concat_tables([pq.read_table(p) for p in parts])


def rows_by_key(run_dir: Path) -> dict[str, dict]:
    rows = read_rows(run_dir).to_pylist()
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys)), "a key was written twice"
    return {r["key"]: r for r in rows}


def assert_contiguous_seqs(table: pa.Table) -> dict[str, int]:
    """Every worker's seqs are 0..n-1 with no gap (no send lost its row); returns n per worker."""
    out: dict[str, int] = {}
    by_worker: dict[str, list[int]] = {}
    for worker, seq in zip(table.column("worker").to_pylist(), table.column("seq").to_pylist(), strict=True):
        by_worker.setdefault(worker, []).append(seq)
    for worker, seqs in by_worker.items():
        seqs.sort()
        assert seqs == list(range(len(seqs))), f"worker {worker}: seqs are not 0..{len(seqs) - 1}"
        out[worker] = len(seqs)
    return out

