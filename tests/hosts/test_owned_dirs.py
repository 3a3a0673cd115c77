"""The host's side of "own only what you made" (`harness.agent.checks`), on this machine's filesystem: an existing
directory without the harness's marker (empty or not), a symlink, a file, a directory of another kind or of another
user is refused in one line and left byte for byte; a directory the harness made, even half made (its marker only),
is used; parents are made only where missing and an existing one is never re-moded; a stale venv of ours is emptied
but for its marker, a current one is left as it is."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from dirsnap import a_tree, snapshot

from harness.agent import checks
from harness.hosts import bundle


def _made(path: Path, kind: str) -> Path:
    """A directory the harness made and was killed right after (its marker only)."""
    assert checks.make_owned(str(path), kind, "n1", "a test")
    return path


def _one_line(problem: str | None, *words: str) -> None:
    assert problem and "\n" not in problem and "allowed:" in problem, problem
    assert all(w in problem for w in words), problem


def test_an_existing_directory_without_the_marker_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    tree = a_tree(tmp_path / "theirs")
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    before = snapshot(tmp_path)
    for path, kind in ((tree, "workdir"), (tree, "venv"), (empty, "workdir"), (empty, "venv")):
        _one_line(checks.owned_problem(str(path), kind), str(path), checks.KINDS[kind], "not made by rmq-chaos",
                  checks.OWNED)
        with pytest.raises(checks.NotOwned):
            checks.make_owned(str(path), kind, "n1", "a test")
        problem = checks.prepare(str(tmp_path / "new-work"), str(path), "abc", "n1", "a test")["problem"]
        _one_line(problem, str(path), "rmq_chaos_venv")
        assert "problem" in checks.prepare(str(path), str(tmp_path / "new-venv"), "abc", "n1", "a test")
    assert snapshot(tmp_path) == before  # nothing made either: both are checked before either is made


def test_symlinks_files_other_kinds_and_system_directories_are_refused(tmp_path: Path) -> None:
    (tmp_path / "to-etc").symlink_to("/etc")
    (tmp_path / "file").write_text("x")
    (tmp_path / "up").symlink_to("/")
    work = _made(tmp_path / "work", "workdir")
    before = snapshot(tmp_path)
    _one_line(checks.owned_problem(str(tmp_path / "to-etc"), "workdir"), "is a symlink (to /etc)")
    _one_line(checks.owned_problem(str(tmp_path / "file"), "venv"), "is not a directory")
    _one_line(checks.owned_problem(str(tmp_path / "file" / "x"), "venv"), str(tmp_path / "file"))
    _one_line(checks.owned_problem(str(tmp_path / "up" / "usr"), "workdir"), "resolves to /usr", "system directory")
    _one_line(checks.owned_problem(str(work), "venv"), "is a workdir rmq-chaos made for n1, not a venv")
    work.chmod(0o777)
    _one_line(checks.owned_problem(str(work), "workdir"), "writable by others")
    work.chmod(0o700)
    (work / checks.OWNED).write_text("my own notes\nkind: workdir\n")  # not the harness's first line
    _one_line(checks.owned_problem(str(work), "workdir"), "not made by rmq-chaos")
    assert snapshot(tmp_path).keys() == before.keys()


def test_a_directory_of_another_user_with_a_marker_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    work = _made(tmp_path / "work", "workdir")
    os.chown(work, 65534, 65534)
    _one_line(checks.owned_problem(str(work), "workdir"), "belongs to uid 65534")
    os.chown(work / checks.OWNED, 65534, 65534)
    _one_line(checks.owned_problem(str(work), "workdir"), "not made by rmq-chaos")


def test_the_harness_makes_its_directories_marker_first_and_only_missing_parents(tmp_path: Path) -> None:
    opt = a_tree(tmp_path / "opt", mode=0o751)  # an existing parent of someone else's
    before = snapshot(opt)
    work, venv = opt / "rmq" / "deep" / "work", opt / "rmq" / "deep" / "work" / "venv"
    assert checks.owned_problem(str(work), "workdir") is None  # not there yet: fine
    facts = checks.prepare(str(work), str(venv), "abc", "n1", "rmq-chaos (bundle abc) from control")
    assert facts == {"current": False, "made": [str(work), str(venv)]}
    after = snapshot(opt)
    assert {k: v for k, v in after.items() if not k.startswith(("rmq", "."))} \
        == {k: v for k, v in before.items() if k != "."}  # what was there is as it was
    assert after["."][:4] == before["."][:4]  # the parent: its type, mode and owner as they were
    assert not (opt / "rmq" / checks.OWNED).exists() and os.stat(opt / "rmq").st_mode & 0o022 == 0
    assert os.stat(work).st_mode & 0o777 == 0o700 and os.stat(venv).st_mode & 0o777 == 0o755
    marker = (work / checks.OWNED).read_text()
    assert marker.startswith("rmq-chaos") and "kind: workdir" in marker and "host: n1" in marker
    assert "made-by: rmq-chaos (bundle abc) from control" in marker
    assert "kind: venv" in (venv / checks.OWNED).read_text()
    assert checks.owned_problem(str(work), "workdir") is None and checks.owned_problem(str(venv), "venv") is None


def test_a_half_made_directory_is_ours_and_a_stale_venv_is_emptied_but_for_its_marker(tmp_path: Path) -> None:
    work, venv = _made(tmp_path / "work", "workdir"), tmp_path / "work" / "venv"
    assert checks.prepare(str(work), str(venv), "abc", "n1", "t") == {"current": False, "made": [str(venv)]}
    site = venv / "lib" / f"python{checks.sys.version_info[0]}.{checks.sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (site / "old.py").write_text("x")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to("/nonexistent")
    (site / checks.BUNDLE_MARKER).write_text("abc")
    marker = (venv / checks.OWNED).read_text()
    before = snapshot(tmp_path)
    assert checks.prepare(str(work), str(venv), "abc", "n1", "t") == {"current": True, "made": []}
    assert snapshot(tmp_path) == before  # the bundle there is this one: nothing touched
    assert checks.prepare(str(work), str(venv), "def", "n1", "t") == {"current": False, "made": []}
    assert sorted(os.listdir(venv)) == [checks.OWNED] and (venv / checks.OWNED).read_text() == marker
    assert (work / checks.OWNED).exists()


def test_cleanup_facts_name_what_is_not_ours(tmp_path: Path) -> None:
    theirs = a_tree(tmp_path / "theirs")
    (theirs / "state").mkdir()
    facts = checks.cleanup_facts(str(theirs), str(tmp_path / "venv"))
    assert facts["state"] and "not made by rmq-chaos" in facts["workdir"] and facts["venv"] is None
    assert not facts["harness"]
    ours = _made(tmp_path / "ours", "workdir")
    assert checks.cleanup_facts(str(ours), str(theirs))["workdir"] is None
    assert "rmq_chaos_venv" in checks.cleanup_facts(str(ours), str(theirs))["venv"]


def test_the_host_reads_the_bundle_marker_the_bundle_writes() -> None:
    assert checks.BUNDLE_MARKER == bundle.MARKER
