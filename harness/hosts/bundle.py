"""What the harness puts on each host: one tar of this checkout's packages and of the installed distributions they
need on a host (the load, the consumers, the agent: Locust, gevent, pyarrow, numpy, psutil, pydantic, ...; not
Spark, matplotlib or the Docker SDK, which only the control node uses), taken from the control node's own
environment, never downloaded. A host extracts it into a venv of its own Python (`<workdir>/venv`), which must be
the control node's Python version on the same machine architecture (compiled wheels come along as they are):
`hello` checks that before anything is started.

The tar is built once per content (`~/.cache/rmq-chaos/bundle-<hash>.tar`) and sent to a host only when the hash
it holds (`<workdir>/venv/.rmq-chaos-bundle`) differs.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import io
import os
import re
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("remoting", "emulator", "faults", "loads", "harness", "analysis")
PACKAGE_DATA = (".py", ".yaml", ".conf", ".j2", ".html", ".css", ".java")
CONTROL_ONLY = {"pyspark", "matplotlib", "docker", "py4j", "pytest"}
"""Distributions only the control node needs (analysis, report, compose backend, tests), with what only they pull in."""
ROOT_DISTRIBUTION = "rmq-chaos"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rmq-chaos"
MARKER = ".rmq-chaos-bundle"


@dataclass(frozen=True)
class Bundle:
    path: Path
    digest: str
    python: str  # "3.11"
    machine: str


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def host_distributions(root: str = ROOT_DISTRIBUTION) -> list[md.Distribution]:
    """The installed distributions a host needs: the root's requirements, transitively, without CONTROL_ONLY."""
    seen: dict[str, md.Distribution] = {}
    todo = [_norm(r.name) for r in _requirements(md.distribution(root)) if _norm(r.name) not in CONTROL_ONLY]
    while todo:
        name = todo.pop()
        if name in seen or name in CONTROL_ONLY:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # an optional extra not installed here
        seen[name] = dist
        todo += [_norm(r.name) for r in _requirements(dist)]
    return sorted(seen.values(), key=lambda d: _norm(d.metadata["Name"]))


def _requirements(dist: md.Distribution) -> list[Requirement]:
    out = []
    for line in dist.requires or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req)
    return out


def _files(dist: md.Distribution) -> list[tuple[Path, str]]:
    """(absolute path, path inside site-packages) of every installed file of `dist` under site-packages."""
    base = Path(dist.locate_file("")).resolve()
    out = []
    for f in dist.files or []:
        p = Path(dist.locate_file(f)).resolve()
        if p.is_file() and p.is_relative_to(base) and "__pycache__" not in p.parts:
            out.append((p, p.relative_to(base).as_posix()))
    return out


def _ours() -> list[tuple[Path, str]]:
    out = []
    for pkg in PACKAGES:
        for p in sorted((REPO / pkg).rglob("*")):
            if p.is_file() and p.suffix in PACKAGE_DATA and "__pycache__" not in p.parts:
                out.append((p, p.relative_to(REPO).as_posix()))
    return out


def build_bundle() -> Bundle:
    """The bundle of this checkout and environment (built, or found in the cache)."""
    members = _ours() + [m for d in host_distributions() for m in _files(d)]
    h = hashlib.sha256()
    for path, name in members:
        st = path.stat()
        h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    machine = os.uname().machine
    h.update(f"{python} {machine}".encode())
    digest = h.hexdigest()[:16]
    target = CACHE / f"bundle-{digest}.tar"
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        # a name of this writer's own: two runs started together both build it (a shared name was renamed away
        # under the other: "No such file or directory: ...bundle-<hash>.tmp")
        fd, tmp = tempfile.mkstemp(dir=CACHE, prefix=f".bundle-{digest}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w") as tar:
                for path, name in members:
                    tar.add(path, arcname=name, recursive=False)
                info = tarfile.TarInfo(MARKER)
                data = digest.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return Bundle(target, digest, python, machine)
