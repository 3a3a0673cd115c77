"""Make a corpus excerpt from a run directory's `logs/`: `python -m tests.diagnose.excerpt RUN_DIR NAME`.

Keeps, per log file, its first HEAD_LINES lines and at most PER_FINGERPRINT lines of each fingerprint (in file
order; of a commitlog flush thread in a thread dump, its whole stanza; of a memory-status snapshot, its stamped
header and VmSwap line), and the node's broker.conf whole; files with nothing kept are left out. The excerpt is our
run's own output (never a RocketMQ build), small enough to commit; `tests/diagnose/corpus/README.md` lists where each
came from.
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.diagnose.scan import BROKER_DESTROYED, SEARCHED

HEAD_LINES = 3
PER_FINGERPRINT = 12
CORPUS = Path(__file__).resolve().parent / "corpus"
ANCHORS = [*SEARCHED, (BROKER_DESTROYED, "destroyed"), (b"/status (", "status")]
"""What `rmq-chaos diagnose` searches for, and the lines read beside it: the name server's route-table line after an
idle close, a memory status' stamped header."""


def excerpt(src: Path) -> bytes:
    kept, per, in_stanza = [], {}, False
    for n, line in enumerate(src.read_bytes().splitlines(keepends=True)):
        if in_stanza:
            kept.append(line)
            in_stanza = bool(line.strip())
            continue
        hit = next((fid for a, fid in ANCHORS if a in line), None)
        if hit and per.get(hit, 0) < PER_FINGERPRINT:
            per[hit] = per.get(hit, 0) + 1
            kept.append(line)
            in_stanza = hit == "jstack_flush"
        elif n < HEAD_LINES:
            kept.append(line)
    return b"".join(kept) if per else b""


def main(run_dir: str, name: str) -> None:
    logs = Path(run_dir) / "logs"
    out = CORPUS / name
    for src in sorted(p for p in logs.rglob("*") if p.is_file()):
        rel = src.relative_to(logs)
        data = src.read_bytes() if src.suffix == ".conf" and "namesrv" not in rel.parts else excerpt(src)
        if data:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
    print(f"{out}: {sum(p.stat().st_size for p in out.rglob('*') if p.is_file())} bytes")


if __name__ == "__main__":
    main(*sys.argv[1:3])
