"""broker.conf and namesrv.conf of the local backend: the layout keys the harness owns (names, ids, roles, ports,
addresses, store paths) and the scenario's overrides on top (already linted, see `harness.scenario.lint`).

Defaults written on purpose, matching the recorded real cluster (`../shared/fixtures/README.md`): the master is
SYNC_MASTER with SYNC_FLUSH, the slave ASYNC_FLUSH; `brokerIP1 = brokerIP2 = 127.0.0.1`; `storePathCommitLog` is
set beside `storePathRootDir` (4.9.1 does not derive it); the slave reads `slaveReadEnable=true` so the read-back can
pull from it (Apache's default is false: the scenario may override it, and then the slave's read-back is empty);
the slave's `haMasterAddress` is set when the HA relay sits on its path (a fixed address stops the slave from
learning it from the name server, as in Apache's BrokerController)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.scenario import ClusterSpec, conf_text
from remoting.javaprops import store_line

HOST = "127.0.0.1"
MASTER_DEFAULTS: dict[str, Any] = {"brokerRole": "SYNC_MASTER", "flushDiskType": "SYNC_FLUSH"}
SLAVE_DEFAULTS: dict[str, Any] = {"brokerRole": "SLAVE", "flushDiskType": "ASYNC_FLUSH", "slaveReadEnable": True}


@dataclass(frozen=True)
class BrokerLayout:
    """Where one broker lives: its id, ports, store root and the name server address."""

    node: str
    listen_port: int
    ha_port: int
    store_root: Path
    namesrv_addr: str
    ha_master_address: str | None = None
    host: str = HOST
    """the address of the broker's host (brokerIP1/brokerIP2): 127.0.0.1 here, the host's on another machine"""
    group: str | None = None
    """its broker group's name (`brokerName`; default `cluster.broker_name`)"""
    role: str | None = None
    """`master` / `slave` (default: the node's name, as with one group)"""

    @property
    def broker_role(self) -> str:
        return self.role or self.node

    @property
    def broker_id(self) -> int:
        return 0 if self.broker_role == "master" else 1

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.listen_port}"


def broker_properties(cluster: ClusterSpec, layout: BrokerLayout) -> dict[str, Any]:
    """The properties of one broker, in the order they are written."""
    props: dict[str, Any] = {
        "brokerClusterName": cluster.cluster_name,
        "brokerName": layout.group or cluster.broker_name,
        "brokerId": layout.broker_id,
        "namesrvAddr": layout.namesrv_addr,
        "brokerIP1": layout.host,
        "brokerIP2": layout.host,
        "listenPort": layout.listen_port,
        "haListenPort": layout.ha_port,
        "storePathRootDir": str(layout.store_root),
        "storePathCommitLog": str(layout.store_root / "commitlog"),
    }
    if layout.ha_master_address:
        props["haMasterAddress"] = layout.ha_master_address
    props.update(MASTER_DEFAULTS if layout.broker_role == "master" else SLAVE_DEFAULTS)
    props.update(requested(cluster, layout.broker_role))
    return props


def requested(cluster: ClusterSpec, section: str) -> dict[str, Any]:
    """What the scenario asked for a broker of this `cluster.broker` section (its role: master, slave; `common` in
    controller mode): the keys the effective-config check compares."""
    return dict(cluster.broker.for_node(section))


def render(props: Mapping[str, Any]) -> str:
    """Java properties text, every key and value escaped as `Properties.store` does (the scenario refuses control
    characters already; escaping anyway means no value can ever start a line of its own)."""
    return "".join(store_line(str(k), conf_text(v)) for k, v in props.items())


def namesrv_properties(cluster: ClusterSpec, port: int) -> dict[str, Any]:
    return {"listenPort": port, **cluster.namesrv}
