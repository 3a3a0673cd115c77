"""Existing directories named as a host's work directory or venv survive byte for byte, through real sshds on the
session's hosts: `rmq-chaos run --backend ssh` with an inventory naming someone else's directory (files of several
modes, a subdirectory, a symlink) as `rmq_chaos_workdir` or `rmq_chaos_venv`, or a work directory that is a symlink,
is refused in one line naming the host, the variable and the path, exit 2, and nothing is changed or made on any host.
`cleanup --hosts` does not replay a journal in a work directory the harness did not make. And the install itself
(`harness.hosts.deploy.install`, with a small stand-in bundle) makes only the missing parents, the work directory
and the venv with their markers, accepts a half-made work directory of its own, replaces a stale venv's content and
keeps its marker."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import REPO, inventory_text
from dirsnap import a_tree, snapshot

from harness.agent import checks

pytestmark = pytest.mark.root
SCENARIO = REPO / "scenarios" / "slave-readonly-default.yaml"
INSTALL = """\
import json, shutil, sys
from pathlib import Path
from harness.hosts.bundle import Bundle
from harness.hosts.deploy import HostError, install
from harness.hosts.inventory import load_inventory
from harness.hosts.ssh import SshHost, make_control_dir

control = make_control_dir()
hosts = {name: SshHost(h, control) for name, h in load_inventory(sys.argv[1]).hosts.items()}
out = []
try:
    for host, tar, digest in zip(sys.argv[2::3], sys.argv[3::3], sys.argv[4::3]):
        try:
            python = f"{sys.version_info[0]}.{sys.version_info[1]}"
            out.append(install(hosts[host], Bundle(Path(tar), digest, python, "")))
        except HostError as err:
            out.append(f"refused: {err}")
finally:
    for ssh in hosts.values():
        ssh.close()
    shutil.rmtree(control, ignore_errors=True)
print(json.dumps(out))
"""


def _rmq_chaos(cluster, tmp_path: Path, args: list[str]) -> tuple[int, list[str]]:
    proc = cluster.rmq_chaos(args, tmp_path / "state", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in out + err, out + err
    return proc.returncode, [ln for ln in (out + err).splitlines() if ln.strip()]


@pytest.mark.parametrize("named", ["workdir", "venv", "symlink"])
def test_an_existing_directory_named_as_workdir_or_venv_survives_byte_for_byte(cluster, tmp_path: Path,
                                                                               named: str) -> None:
    side = tmp_path / "hosts"  # what the hosts see of this test (they share this machine's filesystem)
    side.mkdir()
    if named == "workdir":
        theirs = a_tree(side / "work-n2")
        host, key = "n2", "rmq_chaos_workdir"
    elif named == "venv":
        theirs = a_tree(side / "venv")  # the venv every host shares in this inventory
        host, key = "n1", "rmq_chaos_venv"
    else:
        theirs = side / "work-n3"
        theirs.symlink_to(a_tree(side / "elsewhere"))
        host, key = "n3", "rmq_chaos_workdir"
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(inventory_text(cluster.hosts, side), encoding="utf-8")
    before = snapshot(side)
    code, lines = _rmq_chaos(cluster, tmp_path, ["run", str(SCENARIO), "--out", str(tmp_path / "runs"), "--backend",
                                                 "ssh", "--hosts", str(inventory)])
    assert code == 2 and len(lines) == 1, lines
    assert f"host {host}: {theirs} ({key}) " in lines[0], lines
    assert ("is a symlink (to" if named == "symlink" else "exists and was not made by rmq-chaos") in lines[0]
    assert "allowed: a path that does not exist yet" in lines[0] and checks.OWNED in lines[0]
    assert snapshot(side) == before  # the directory as it was, and nothing made for any host
    assert not (tmp_path / "runs").exists()


def test_cleanup_never_replays_a_journal_in_a_directory_it_did_not_make(cluster, tmp_path: Path) -> None:
    side = tmp_path / "hosts"
    theirs = a_tree(side / "work-n2")
    (theirs / "state").mkdir()
    (theirs / "state" / "journal.jsonl").write_text('{"op": "not ours"}\n')
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(inventory_text(cluster.hosts, side), encoding="utf-8")
    before = snapshot(side)
    code, lines = _rmq_chaos(cluster, tmp_path, ["cleanup", "--hosts", str(inventory)])
    assert code == 1, lines
    assert sorted(ln for ln in lines if not ln.startswith("host n2:")) == [
        f"host {n}: nothing of rmq-chaos there" for n in ("n1", "n3", "n4")], lines
    n2 = [ln for ln in lines if ln.startswith("host n2:")]
    assert len(n2) == 1 and f"the journal in {theirs}/state is not replayed" in n2[0], lines
    assert "not made by rmq-chaos" in n2[0]
    assert snapshot(side) == before


def _bundle(path: Path, digest: str, name: str) -> Path:
    """A stand-in for the harness's bundle: one file and the bundle's marker, last (as `build_bundle` writes it)."""
    with tarfile.open(path, "w") as tar:
        for member, data in ((name, b"print('a stand-in')\n"), (checks.BUNDLE_MARKER, digest.encode())):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _install(cluster, inventory: Path, *steps: tuple[str, tuple[Path, str]]) -> list[str]:
    """`install` on each (host, bundle) in turn, from one control node process: its Python or its refusal each."""
    argv = [sys.executable, "-c", INSTALL, str(inventory), *(str(x) for h, b in steps for x in (h, *b))]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RMQ_CHAOS_KNOWN_HOSTS": str(cluster.known_hosts)}
    proc = subprocess.run(cluster.hosts.parent_argv(argv), cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_install_makes_and_marks_only_what_it_owns(cluster, tmp_path: Path) -> None:
    side = tmp_path / "hosts"
    opt = a_tree(side / "opt", mode=0o751)  # an existing parent of someone else's
    kept = {k: v for k, v in snapshot(opt).items() if k != "."}
    one = (_bundle(tmp_path / "one.tar", "one", "one.py"), "one")
    two = (_bundle(tmp_path / "two.tar", "two", "two.py"), "two")
    work = opt / "rmq" / "work-n2"
    inventory = tmp_path / "inventory.yaml"
    text = inventory_text(cluster.hosts, side, n2=f", rmq_chaos_venv: {work}/venv")  # n2: a venv of its own
    inventory.write_text(text.replace(f"{side}/work-n2", str(work)).replace(f"{side}/work-n3", f"{side}/w3"),
                         encoding="utf-8")
    venv = work / "venv"
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"

    assert _install(cluster, inventory, ("n2", one)) == [f"{venv}/bin/python"]
    assert sorted(p.name for p in site.iterdir()) == [checks.BUNDLE_MARKER, "one.py"]
    assert "kind: workdir" in (work / checks.OWNED).read_text() and "host: n2" in (work / checks.OWNED).read_text()
    assert os.stat(work).st_mode & 0o777 == 0o700
    marker = (venv / checks.OWNED).read_text()
    assert "kind: venv" in marker and "made-by: rmq-chaos (bundle one)" in marker
    assert os.stat(opt).st_mode & 0o777 == 0o751 and {k: v for k, v in snapshot(opt).items()
                                                      if k != "." and not k.startswith("rmq")} == kept
    assert not (opt / "rmq" / checks.OWNED).exists()  # a parent it made: not a directory it owns

    unchanged = snapshot(side)
    assert _install(cluster, inventory, ("n2", one)) == [f"{venv}/bin/python"]
    assert snapshot(side) == unchanged  # the bundle there is this one: nothing sent, nothing touched

    half = side / "w3"  # n3's work directory, half made by a control node killed during an install: its marker only
    assert checks.make_owned(str(half), "workdir", "n3", "a killed control node")
    (side / "work-n4").mkdir()  # empty, but not the harness's: refused by the install too, left as it is
    n4 = snapshot(side / "work-n4")
    shared = side / "venv"
    assert _install(cluster, inventory, ("n2", two), ("n3", one), ("n4", one)) == [
        f"{venv}/bin/python", f"{shared}/bin/python",
        f"refused: host n4: {side}/work-n4 (rmq_chaos_workdir) exists and was not made by rmq-chaos (no "
        f"{checks.OWNED} in it); {checks.OWNED_ALLOWED}"]
    assert sorted(p.name for p in site.iterdir()) == [checks.BUNDLE_MARKER, "two.py"]  # another bundle: replaced
    assert (venv / checks.OWNED).read_text() == marker and os.access(venv / "bin" / "python", os.X_OK)
    assert sorted(os.listdir(half)) == [checks.OWNED] and (shared / checks.OWNED).exists()
    assert snapshot(side / "work-n4") == n4
