"""Version-aware broker.conf lint, before start-up and after it.

Before: every key a scenario sets must exist in the chosen RocketMQ version (Apache's broker ignores unknown keys
silently, so `haSlaveFallbehindMax` on 5.x would quietly do nothing) unless listed in `cluster.allow_keys`, must not
be one the harness sets itself (ports, store paths, role, addresses), and must have the type of its default.
After: the effective config read back from each broker (GET_BROKER_CONFIG) must show every requested value.

The key tables and defaults per version are the emulator's (`emulator.config.broker_config.version_defaults`), the
single copy of Apache's in this project.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from harness.scenario.cluster import BROKER_NODES
from harness.scenario.model import Scenario
from harness.scenario.reader import Marks

HARNESS_KEYS = (
    "brokerClusterName", "brokerName", "brokerId", "namesrvAddr", "listenPort", "haListenPort",
    "storePathRootDir", "storePathCommitLog", "brokerIP1", "brokerIP2", "haMasterAddress",
    "enableControllerMode", "controllerAddr",
)
"""Keys the backend writes itself: ports and addresses are chosen free, stores are the node's own mounts, and
controller mode is `cluster.mode` (which writes every controller's address)."""
PATH_KEY_RE = re.compile(r"^(rocketmqHome|storePath\w*|brokerConfigPath|readOnlyCommitLogStorePaths|tieredStoreFilePath|"
                         r"kvConfigPath|configStorePath|abortFile|storeCheckpoint)$")
"""Keys that name a path on the node: every file of a node stays inside what the harness made for it (its store
mount, its node directory), so no scenario sets one."""
ROLE_VALUES = {"master": ("SYNC_MASTER", "ASYNC_MASTER"), "slave": ("SLAVE",)}
ENUM_VALUES = {"flushDiskType": ("SYNC_FLUSH", "ASYNC_FLUSH")}


def version_defaults(version: str) -> dict[str, str | None]:
    """Apache's broker config keys of `version` with their defaults as broker.conf text (None: computed at start-up
    or null), from the emulator's tables (BrokerConfig, NettyServerConfig, NettyClientConfig, MessageStoreConfig)."""
    from emulator.config.broker_config import version_defaults as emulator_defaults
    from emulator.version import profile_for
    defaults, known = emulator_defaults(profile_for(version))
    return {k: defaults.get(k) for k in known}


def lint_scenario(scenario: Scenario, marks: Marks) -> None:
    """Raise `SourceError` at the first broker.conf override the chosen version cannot take."""
    version = scenario.cluster.version
    table = version_defaults(version)
    allowed = set(scenario.cluster.allow_keys)
    for key in scenario.cluster.namesrv:
        if key == "listenPort" or PATH_KEY_RE.match(key):
            raise marks.error(("cluster", "namesrv", key),
                              f"{key} is set by the harness (a free port, the node's own directory); remove it; "
                              "allowed: name server keys that are not ports or paths")
    for section in ("common", *BROKER_NODES):
        conf: Mapping[str, Any] = getattr(scenario.cluster.broker, section)
        for key, value in conf.items():
            path = ("cluster", "broker", section, key)
            problem = key_problem(key, value, table, version, allowed, section)
            if problem:
                raise marks.error(path, problem)


def key_problem(key: str, value: Any, table: Mapping[str, Any], version: str, allowed: set[str],
                section: str) -> str | None:
    """Why `key=value` cannot go into a `section` broker.conf of `version`, or None."""
    if key in HARNESS_KEYS:
        return f"{key} is set by the harness (free ports, the node's own store mount, the cluster layout); " \
               f"remove it; keys the harness sets: {', '.join(HARNESS_KEYS)}"
    if PATH_KEY_RE.match(key):
        return f"{key} names a path on the node; its store, logs and files stay inside what the harness made for " \
               "it (its own store mount and node directory); allowed: no path keys"
    if key not in table:
        if key in allowed:
            return None
        close = difflib.get_close_matches(key, list(table), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        return (f"RocketMQ {version} has no broker config key {key!r}{hint}; the broker would ignore it silently; "
                f"allowed: a key of {version}, or list it in cluster.allow_keys to pass it on anyway")
    if key == "brokerRole":
        roles = ROLE_VALUES.get(section, ROLE_VALUES["master"] + ROLE_VALUES["slave"])
        if section == "common" or value not in roles:
            return f"{value!r} is not a role of the {section}; allowed: {', '.join(roles)} (set it under master/slave)"
        return None
    if key in ENUM_VALUES and value not in ENUM_VALUES[key]:
        return f"{value!r} is not allowed; allowed: {', '.join(ENUM_VALUES[key])}"
    return type_problem(value, table[key])


def type_problem(value: Any, default: str | None) -> str | None:
    """Whether `value` has the type of a default written as broker.conf text (`true`/`false`, an integer, text)."""
    if default in ("true", "false"):
        if isinstance(value, bool) or value in ("true", "false"):
            return None
        return f"expected true or false, got {value!r}"
    if default is not None and default.lstrip("-").isdigit():
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str)
                                                                          and value.lstrip("-").isdigit())):
            return f"expected an integer, got {value!r}"
    return None


def conf_text(value: Any) -> str:
    """A value as broker.conf (Java properties) writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def effective_differences(requested: Mapping[str, Any], effective: Mapping[str, str],
                          allowed_missing: set[str]) -> list[str]:
    """`key: asked X, broker has Y` for every requested key the broker does not show with the asked value."""
    out = []
    for key, value in requested.items():
        want = conf_text(value)
        if key not in effective:
            if key not in allowed_missing:
                out.append(f"{key}: asked {want}, the broker does not have this key")
        elif effective[key] != want:
            out.append(f"{key}: asked {want}, the broker has {effective[key]}")
    return out
