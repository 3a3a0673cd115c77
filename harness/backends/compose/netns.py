"""The network namespace of a compose run: a holder container (`--network none`: only `lo`, a `sleep`), journaled
before it is made; the `rmq-chaos run` / `cluster up` process then re-executes itself inside the holder's namespace
(`nsenter --net=/proc/<holder pid>/ns/net`, the same pid, so its journal entries keep their owner) and the compose
services join it (`network_mode: container:<holder>`, the compose variable `RMQ_NETWORK_MODE`). The brokers, the
load, the HA relay and Spark of the run then share one loopback and nothing of the run listens on the host's
interfaces: a real 4.9.x broker binds 0.0.0.0, which under host networking would be every interface of the host.
The Docker API is a unix socket, so it still answers from inside.

Every compose run of the CLI gets one (emulator images too: one code path, and the emulator's listeners leave the
host's namespace as well). The holder's hostname resolves to 127.0.0.1 in its /etc/hosts, which the joined
containers share: `InetAddress.getLocalHost()` (RocketMQ's MixAll) fails without it.

The journal entry (`resource:netns_holder`, undo `netns_holder_remove`) is owned by the process that re-executed
itself; a detached cluster holder adopts it (`adopt`). Its undo refuses while running containers still use the
namespace, so a clean-up never pulls the network from under a live cluster; after the containers are gone
(`compose_down` is newer, so `rmq-chaos cleanup` replays it first) the holder is removed."""
from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any, NoReturn

KIND = "resource:netns_holder"
HOLDER_ENV = "RMQ_CHAOS_NETNS_HOLDER"
"""Set in the re-executed process: the holder container's id."""
ENTRY_ENV = "RMQ_CHAOS_NETNS_ENTRY"
"""Set in the re-executed process: the holder's journal entry (changed by `adopt`)."""
HOLDER_LABEL = "rmq-chaos.netns"
STATE_LABEL = "rmq-chaos.state"
NAME_PREFIX = "rmq-chaos-netns-"
HOSTNAME = "rmq-chaos"
HOLDER_MEMORY = 32 << 20


class NetnsHolderError(RuntimeError):
    """The run's network namespace cannot be made here (one line)."""


def holder() -> str | None:
    """The holder container of the namespace this process runs in (None: not in one)."""
    return os.environ.get(HOLDER_ENV) or None


def network_mode() -> str:
    """The compose `network_mode` for this process's run: the holder's namespace, else host networking."""
    ct = holder()
    return f"container:{ct}" if ct else "host"


def _check_tools() -> None:
    from faults.docker import engine

    if shutil.which("nsenter") is None:
        raise NetnsHolderError("nsenter is missing (util-linux); it is needed to run the compose backend in a "
                               "network namespace of its own")
    address = engine.engine_address()
    if not address.startswith("unix://"):
        raise NetnsHolderError(f"DOCKER_HOST={address}: the compose backend runs in a network namespace with only "
                               "loopback and reaches the engine through its unix socket; allowed: unix:///path")


def start(image: str, state_dir: Path) -> tuple[str, str, int]:
    """Journal and start a holder of `image` (any image with `sleep`); returns (container id, entry id, its pid)."""
    from faults.docker import engine
    from faults.journal import Journal

    _check_tools()
    client = engine.client()
    state_dir.mkdir(parents=True, exist_ok=True)
    journal = Journal(state_dir)
    name = f"{NAME_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    entry = journal.begin(KIND, undo=[{"op": "netns_holder_remove", "container": name}], target="netns",
                          data={"container": name, "image": image})
    try:
        ct = client.containers.run(
            image, [], entrypoint=["sleep", "infinity"], name=name, detach=True, network_mode="none",
            hostname=HOSTNAME, extra_hosts={HOSTNAME: "127.0.0.1"}, mem_limit=HOLDER_MEMORY, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], labels={HOLDER_LABEL: "holder", STATE_LABEL: str(state_dir)})
        ct.reload()
    except Exception as err:  # noqa: BLE001 - the SDK's errors, as one line; the entry stays for cleanup
        raise NetnsHolderError(str(engine.api_error(f"start the network namespace holder {name}", err))) from None
    journal.update(entry, data={"container_id": ct.id})
    return ct.id, entry, int(ct.attrs["State"]["Pid"])


def enter(image: str, state_dir: Path) -> NoReturn:
    """Start a holder and replace this process by the same command inside its network namespace."""
    from harness import netns

    ct, entry, pid = start(image, state_dir)
    os.environ.update({HOLDER_ENV: ct, ENTRY_ENV: entry, netns.MARK_ENV: "1"})
    argv = ["nsenter", f"--net=/proc/{pid}/ns/net", "--", sys.executable, "-m", "harness.cli", *sys.argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)


def adopt(state_dir: Path) -> None:
    """In a detached cluster holder (forked after `enter`): take the holder's journal entry over, so it lives as
    long as this process and not the command that started it."""
    from faults.journal import Journal

    old = os.environ.get(ENTRY_ENV)
    if not old:
        return
    journal = Journal(state_dir)
    entry = journal.get(old)
    if entry is None or entry.done:
        return
    new = journal.begin(KIND, undo=entry.undo, run_id=entry.run_id, target=entry.target,
                        data={**entry.data, "adopted_from": old})
    os.environ[ENTRY_ENV] = new
    journal.done(old, f"adopted by pid {os.getpid()}")


def release(state_dir: Path) -> str | None:
    """Remove this process's holder (its journal entry done); None when there is none. This process stays in the
    namespace, which lives until its last process ends."""
    from faults.journal import Journal
    from faults.undo import undo_entry

    entry_id = os.environ.get(ENTRY_ENV)
    if not entry_id:
        return None
    results = undo_entry(Journal(state_dir), entry_id)
    if results is None:
        return None
    return "; ".join(str(r.get("result")) for r in results)


def holders(state_dir: Path) -> list[Any]:
    """Holder containers made for `state_dir` (any state: running or not)."""
    from faults.docker import engine

    return engine.client().containers.list(all=True, filters={"label": f"{STATE_LABEL}={state_dir}"})
