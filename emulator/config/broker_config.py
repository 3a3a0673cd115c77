"""The broker's effective configuration: Apache's property names and defaults for the version profile, overlaid with
broker.conf, typed on read, changed live by UPDATE_BROKER_CONFIG (listeners see every change) and written back to the
`-c` file as 4.9.1's `Configuration.persist` does. Bad values fail with one line naming the file, key and allowed
values; keys the version does not have are kept out and reported, as the real broker silently ignores them."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from emulator.config.defaults import (
    ADDED_4_9_3,
    ADDED_5_X,
    DEFAULTS_4_9_1,
    KEYS_5_X,
    NULL_KEYS_4_9_1,
    REMOVED_5_X,
)
from emulator.config.properties import format_properties, load_properties_file
from emulator.version import VersionProfile

BIND_ENV = "RMQ_EMULATOR_BIND"
DEFAULT_BIND = "127.0.0.1"
ENUMS = {
    "brokerRole": ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE"),
    "flushDiskType": ("ASYNC_FLUSH", "SYNC_FLUSH"),
}


class ConfigError(ValueError):
    """A broker.conf problem, already phrased as the one line the program prints."""


class DataVersion:
    """`{"counter":N,"timestamp":ms}` as fastjson writes RocketMQ's DataVersion; a 5.x controller-mode broker also
    carries `stateVersion` (its master epoch, `nextVersion(epoch)`), which the name server compares when two brokers
    claim the same broker id."""

    def __init__(self) -> None:
        self.counter = 0
        self.timestamp = int(time.time() * 1000)
        self.state_version: int | None = None

    def next_version(self, state_version: int | None = None) -> None:
        self.counter += 1
        self.timestamp = int(time.time() * 1000)
        if state_version is not None:
            self.state_version = state_version

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def to_dict(self) -> dict:
        if self.state_version is not None:
            return {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp}
        return {"counter": self.counter, "timestamp": self.timestamp}

    def same_as(self, doc: dict | None) -> bool:
        """`DataVersion.equals` against a synced `dataVersion`: the same timestamp and counter (not the state
        version)."""
        doc = doc or {}
        return int(doc.get("counter", -1)) == self.counter and int(doc.get("timestamp", -1)) == self.timestamp

    def assign(self, doc: dict | None, counter_default: int | None = None) -> None:
        """Take a stored or synced `dataVersion`; a missing key keeps this one's value (the counter:
        `counter_default` when given)."""
        doc = doc or {}
        self.counter = int(doc.get("counter", self.counter if counter_default is None else counter_default))
        self.timestamp = int(doc.get("timestamp", self.timestamp))
        if "stateVersion" in doc:
            self.state_version = int(doc["stateVersion"])


def bind_address() -> str:
    return os.environ.get(BIND_ENV, DEFAULT_BIND)


def _local_address() -> str:
    bind = bind_address()
    if bind not in ("0.0.0.0", ""):
        return bind
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _computed_default(key: str, profile: VersionProfile) -> str | None:
    home = os.path.expanduser("~")
    cores = os.cpu_count() or 1
    return {
        "storePathRootDir": os.path.join(home, "store"),
        "storePathCommitLog": os.path.join(home, "store", "commitlog"),
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME", str(Path(__file__).resolve().parent.parent)),
        "namesrvAddr": os.environ.get("NAMESRV_ADDR"),
        "brokerName": socket.gethostname(),
        "brokerIP1": _local_address(),
        "brokerIP2": _local_address(),
        "sendMessageThreadPoolNums": str(min(cores, 4)),
        "putMessageFutureThreadPoolNums": str(min(cores, 4)),
    }.get(key)


def version_defaults(profile: VersionProfile) -> tuple[dict[str, str | None], frozenset[str]]:
    """(defaults in GET_BROKER_CONFIG order, every property name the version knows)."""
    items: list[tuple[str, str | None]] = list(DEFAULTS_4_9_1)
    known = {k for k, _ in items} | set(NULL_KEYS_4_9_1)
    if not profile.is_4_9_1:
        items += list(ADDED_4_9_3)
        known |= {k for k, _ in ADDED_4_9_3} | {"readOnlyCommitLogStorePaths"}
    if profile.is_5x:
        items = [(k, v) for k, v in items if k not in REMOVED_5_X] + list(ADDED_5_X)
        known = (known - set(REMOVED_5_X)) | set(KEYS_5_X)
    defaults = {k: (v if v is not None else _computed_default(k, profile)) for k, v in items}
    return defaults, frozenset(known)


class BrokerConfig:
    """Typed, live view of the broker's properties. Reads are lock-free dict look-ups (the hot path asks often)."""

    def __init__(self, profile: VersionProfile, path: str | None = None, overrides: dict[str, str] | None = None):
        self.profile = profile
        self.path = path
        self.data_version = DataVersion()
        self.unknown: dict[str, str] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[dict[str, str]], None]] = []
        defaults, self.known = version_defaults(profile)
        self._types = {k: _type_of(v) for k, v in defaults.items()}
        self._values: dict[str, str | None] = dict(defaults)
        given = load_properties_file(path) if path else {}
        given.update(overrides or {})
        self._apply(given, source=path or "command line")
        self._derive()

    # --- reading ---------------------------------------------------------------------------------------------
    def get(self, key: str) -> str | None:
        return self._values.get(key)

    def get_int(self, key: str) -> int:
        return int(self._values[key])  # type: ignore[arg-type]

    def get_bool(self, key: str) -> bool:
        return self._values.get(key) == "true"

    def items(self) -> list[tuple[str, str]]:
        """Every property with a value, in the real broker's order (GET_BROKER_CONFIG, the rewritten -c file)."""
        return [(k, v) for k, v in self._values.items() if v is not None]

    @property
    def role(self) -> str:
        return self._values["brokerRole"]  # type: ignore[return-value]

    @property
    def is_slave(self) -> bool:
        return self.role == "SLAVE"

    @property
    def is_sync_master(self) -> bool:
        return self.role == "SYNC_MASTER"

    @property
    def sync_flush(self) -> bool:
        return self._values["flushDiskType"] == "SYNC_FLUSH"

    @property
    def controller_mode(self) -> bool:
        """5.x `enableControllerMode`: the controller decides role and broker id."""
        return self.profile.is_5x and self.get_bool("enableControllerMode")

    def epoch_file(self) -> str:
        return self._values.get("storePathEpochFile") or os.path.join(self._values["storePathRootDir"] or "",
                                                                      "epochFileCheckpoint")

    def broker_identity_file(self) -> str:
        return self._values.get("storePathBrokerIdentity") or os.path.join(self._values["storePathRootDir"] or "",
                                                                           "brokerIdentity")

    def set_runtime(self, key: str, value: str) -> None:
        """What the broker sets on itself at run time (controller mode: `brokerRole`, `brokerId`), not written to
        the -c file, no listeners (Java's plain setters)."""
        self._values[key] = value

    @property
    def transient_store_pool_enabled(self) -> bool:
        """4.9.1 `isTransientStorePoolEnable()`: the flag, ASYNC_FLUSH, and not a slave."""
        return self.get_bool("transientStorePoolEnable") and not self.sync_flush and not self.is_slave

    def commitlog_dir(self) -> str:
        return self._values["storePathCommitLog"]  # type: ignore[return-value]

    # --- changing --------------------------------------------------------------------------------------------
    def on_change(self, listener: Callable[[dict[str, str]], None]) -> None:
        self._listeners.append(listener)

    def update(self, changes: dict[str, str]) -> None:
        """UPDATE_BROKER_CONFIG: validate, apply, bump the data version, rewrite the -c file, tell listeners."""
        with self._lock:
            applied = self._apply(changes, source="UPDATE_BROKER_CONFIG")
            self.data_version.next_version()
            self.persist()
        for listener in self._listeners:
            listener(applied)

    def persist(self) -> None:
        """Write every property to the -c file (4.9.1 `Configuration.persist` -> `MixAll.string2File`)."""
        if not self.path:
            return
        tmp = f"{self.path}.tmp"
        Path(tmp).write_text(format_properties(self.items()), encoding="utf-8")
        os.replace(tmp, self.path)

    def _apply(self, given: dict[str, str], source: str) -> dict[str, str]:
        applied: dict[str, str] = {}
        for key, raw in given.items():
            value = raw.strip()
            if key not in self.known:
                self.unknown[key] = value
                continue
            applied[key] = self._check(key, value, source)
        self._values.update(applied)
        return applied

    def _check(self, key: str, value: str, source: str) -> str:
        if key in ENUMS and value not in ENUMS[key]:
            raise ConfigError(f"{source}: {key}={value!r} is not allowed; allowed values: {', '.join(ENUMS[key])}")
        kind = self._types.get(key, "str")
        if kind == "bool":
            if value.lower() not in ("true", "false"):
                raise ConfigError(f"{source}: {key}={value!r} is not allowed; allowed values: true, false")
            return value.lower()
        if kind == "int":
            try:
                int(value)
            except ValueError:
                raise ConfigError(f"{source}: {key}={value!r} is not allowed; allowed values: an integer") from None
        return value

    def _derive(self) -> None:
        """What BrokerStartup does after reading the file: masters get brokerId 0, a slave needs one > 0 (not in
        5.x controller mode, where the controller assigns ids), and haListenPort is listenPort + 1 (4.9.x always;
        5.x unless configured)."""
        where = self.path or "command line"
        if self.controller_mode:
            pass
        elif self.is_slave:
            if int(self._values.get("brokerId") or 0) <= 0:
                raise ConfigError(f"{where}: brokerId={self._values.get('brokerId')!r} is not allowed for "
                                  f"brokerRole=SLAVE; allowed values: an integer > 0 (Slave's brokerId must be > 0)")
        else:
            self._values["brokerId"] = "0"
        if not (self.profile.is_5x and "haListenPort" in self._explicit() and self.get_int("haListenPort") > 0):
            self._values["haListenPort"] = str(self.get_int("listenPort") + 1)
        if self.profile.is_5x and "storePathCommitLog" not in self._explicit():
            self._values["storePathCommitLog"] = os.path.join(self._values["storePathRootDir"], "commitlog")

    def _explicit(self) -> set[str]:
        return set(load_properties_file(self.path)) if self.path else set()


def _type_of(default: str | None) -> str:
    if default in ("true", "false"):
        return "bool"
    if default is not None and default.lstrip("-").isdigit():
        return "int"
    return "str"
