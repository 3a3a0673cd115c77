"""`rmq-chaos cleanup --hosts FILE` after a control node killed before or while it installed the harness on the hosts
(found by benchmarks/hosts_kill.py): hosts without a work directory, or with one but no journal, or whose venv was
made but the bundle not extracted completely, have nothing to undo (exit 0, one line each); a host with a journal
that the harness there cannot replay is one line naming the host and a failed cleanup (exit 1), never a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import inventory_text

pytestmark = pytest.mark.root


def _cleanup(cluster, inventory: Path, state: Path) -> tuple[int, list[str]]:
    proc = cluster.rmq_chaos(["cleanup", "--hosts", str(inventory)], state, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, [ln for ln in out.splitlines() if ln.strip()]


def test_cleanup_after_a_kill_during_the_install(cluster, tmp_path: Path) -> None:
    venv = tmp_path / "venv"  # made, the bundle not extracted: as a kill during `install` leaves it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    text = inventory_text(cluster.hosts, cluster.base).replace(str(cluster.base / "venv"), str(venv))
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(text.replace(str(cluster.base / "work-"), str(tmp_path / "work-")), encoding="utf-8")
    (tmp_path / "work-n2").mkdir()  # n2: a work directory without a journal; n1, n3, n4: none at all
    code, lines = _cleanup(cluster, inventory, tmp_path / "state")
    assert code == 0, lines
    assert sorted(lines) == [f"host {n}: nothing of rmq-chaos there" for n in ("n1", "n2", "n3", "n4")], lines

    (tmp_path / "work-n3" / "state").mkdir(parents=True)  # n3: a journal the half-made harness cannot replay
    code, lines = _cleanup(cluster, inventory, tmp_path / "state")
    assert code == 1, lines
    n3 = [ln for ln in lines if ln.startswith("host n3:")]
    assert len(n3) == 1 and "not installed completely" in n3[0] and "Traceback" not in "\n".join(lines), lines
