"""Copying each node's logs into the run directory (`logs/<node>/`) at the end of a run, whatever state the node
is in; a file that cannot be read is listed in `logs/<node>/COPY-ERRORS.txt` instead of failing the run."""
from __future__ import annotations

import shutil
from pathlib import Path

ERRORS_FILE = "COPY-ERRORS.txt"


def copy_node_logs(sources: dict[str, list[Path]], logs_dir: Path) -> dict[str, int]:
    """Copy every file under each node's source directories; returns files copied per node."""
    copied: dict[str, int] = {}
    for node, dirs in sources.items():
        dest = logs_dir / node
        dest.mkdir(parents=True, exist_ok=True)
        errors: list[str] = []
        n = 0
        for src in dirs:
            if not src.is_dir():
                continue
            for f in sorted(p for p in src.rglob("*") if p.is_file()):
                target = dest / f.relative_to(src)
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, target)
                    n += 1
                except OSError as err:
                    errors.append(f"{f}: {err.strerror or err}")
        if errors:
            (dest / ERRORS_FILE).write_text("\n".join(errors) + "\n", encoding="utf-8")
        copied[node] = n
    return copied
