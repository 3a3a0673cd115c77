"""`analysis.contract.compact` on real Parquet files: a directory's parts become compacted files holding the same rows
in the same order (conformed to the contract's columns), a part the contract cannot read stays for the analysis to
report, a compaction that fails leaves every source and no temporary file, and one cut short between the compacted
file and the removal of its sources is read once (by the analysis's screening) and finished by the next
compaction."""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.contract import compact
from analysis.contract.parts import write_part
from analysis.rundir import _screen_parts

SCHEMA = pa.schema([pa.field("seq", pa.int64(), nullable=False), pa.field("note", pa.string())])
OLD = pa.schema([pa.field("seq", pa.int64(), nullable=False)])  # a writer before `note` existed


def _parts(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def _fill(d: Path) -> list[int]:
    seqs = []
    for i in range(4):
        rows = [{"seq": 10 * i + j, "note": f"r{i}"} for j in range(3)]
        write_part(rows, d, "w0", SCHEMA)
        seqs += [r["seq"] for r in rows]
    write_part([{"seq": 99}], d, "old", OLD)
    return [99] + seqs  # in the parts' name order: part-old-... before part-w0-...


def test_parts_become_one_file_with_the_same_rows(tmp_path: Path) -> None:
    seqs = _fill(tmp_path)
    (tmp_path / "part-w1-000000.parquet").write_bytes(b"PAR1 cut short")  # a part a crash cut
    pq.write_table(pa.table({"seq": pa.array(["x"])}), tmp_path / "part-w2-000000.parquet")  # wrong type
    done = compact.compact_dir(tmp_path, SCHEMA)
    assert done is not None and done.sources == 5 and done.rows == 13
    assert _parts(tmp_path) == ["part-compacted-000000.parquet", "part-w1-000000.parquet", "part-w2-000000.parquet"]
    table = pq.read_table(tmp_path / "part-compacted-000000.parquet")
    assert table.column("seq").to_pylist() == seqs
    assert table.column("note").to_pylist()[:2] == [None, "r0"]
    assert compact.compact_dir(tmp_path, SCHEMA) is None  # nothing left to merge


def test_files_are_cut_at_file_rows(tmp_path: Path, monkeypatch) -> None:
    _fill(tmp_path)
    monkeypatch.setattr(compact, "FILE_ROWS", 6)
    done = compact.compact_dir(tmp_path, SCHEMA)
    assert done is not None and [pq.read_metadata(f).num_rows for f in done.files] == [4, 6, 3]


def test_a_failed_compaction_leaves_every_source(tmp_path: Path, monkeypatch) -> None:
    _fill(tmp_path)
    before = _parts(tmp_path)

    def full(tmp: Path, final: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(compact, "commit_file", full)
    with pytest.raises(OSError):
        compact.compact_dir(tmp_path, SCHEMA)
    assert _parts(tmp_path) == before


def test_a_compaction_cut_short_is_read_once_and_finished_next_time(tmp_path: Path) -> None:
    _fill(tmp_path)
    keep = tmp_path.parent / "sources"
    shutil.copytree(tmp_path, keep)
    compact.compact_dir(tmp_path, SCHEMA)
    for name in ("part-w0-000001.parquet", "part-w0-000003.parquet"):  # the removal stopped here
        shutil.copy(keep / name, tmp_path / name)
    good, bad = _screen_parts(tmp_path, SCHEMA)
    assert [p.name for p in good] == ["part-compacted-000000.parquet"] and bad == []
    assert compact.compact_dir(tmp_path, SCHEMA) is None
    assert _parts(tmp_path) == ["part-compacted-000000.parquet"]


def test_a_group_called_compacted_is_not_taken_for_a_compacted_file(tmp_path: Path) -> None:
    write_part([{"seq": 1}], tmp_path, "compacted-x.c0", SCHEMA)
    write_part([{"seq": 2}], tmp_path, "compacted-x.c0", SCHEMA)
    assert not any(compact.is_compacted(p) for p in tmp_path.iterdir())
    assert compact.compact_dir(tmp_path, SCHEMA).sources == 2


def test_a_compacted_file_whose_footer_is_not_ours_names_no_sources(tmp_path: Path) -> None:
    for i, meta in enumerate((b"not json", b'{"a": 1}', b'[1, "part-w0-000000.parquet"]')):
        table = pa.table({"seq": [i]}).replace_schema_metadata({compact.SOURCES_KEY: meta})
        pq.write_table(table, tmp_path / f"part-compacted-00000{i}.parquet")
    assert compact.superseded(tmp_path) == {"part-w0-000000.parquet"}
