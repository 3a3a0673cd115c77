"""The conf files of a controller-mode cluster (5.x, RIP-44) on one machine: the name server (with
`enableControllerInNamesrv` and the DLedger keys when the controller is embedded), the standalone controllers
(`cluster.controllers: 3`, one DLedger group), and the brokers of each broker set (`harness.topology`), each with
`enableControllerMode=true`, `brokerId=-1` and `brokerRole=SLAVE` (the controller gives the ids and elects the
master) and `controllerAddr` naming every controller's DLedger peer port (controllers serve brokers there, not on
the name server's port; /work/rmq-dist/STATUS.md). Every broker reads `slaveReadEnable=true` so the read-back can
pull from whichever is a slave when it runs. The scenario's `broker.common` and `controller` overrides come last."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.scenario import ClusterSpec

DLEDGER_GROUP = "rmqchaos"
BROKER_DEFAULTS: dict[str, Any] = {"brokerId": -1, "brokerRole": "SLAVE", "flushDiskType": "ASYNC_FLUSH",
                                   "enableControllerMode": True, "slaveReadEnable": True}


@dataclass(frozen=True)
class ControllerLayout:
    """Ports and directories of the controller(s): `peer_ports[i]` is controller i's DLedger port (the embedded
    controller's is the one entry)."""

    peer_ports: tuple[int, ...]
    host: str = "127.0.0.1"
    hosts: tuple[str, ...] = ()
    """Each controller's host address when they are on several hosts (ssh backend); else `host` for all."""

    @property
    def addrs(self) -> list[str]:
        return [f"{self.hosts[i] if self.hosts else self.host}:{p}" for i, p in enumerate(self.peer_ports)]

    def group(self) -> dict[str, Any]:
        peers = ";".join(f"n{i}-{a}" for i, a in enumerate(self.addrs))
        return {"controllerDLegerGroup": DLEDGER_GROUP, "controllerDLegerPeers": peers}


def namesrv_properties(cluster: ClusterSpec, port: int, ctl: ControllerLayout, node_dir: Path) -> dict[str, Any]:
    props: dict[str, Any] = {"listenPort": port}
    if cluster.controllers == "embedded":
        props.update(enableControllerInNamesrv=True, **ctl.group(), controllerDLegerSelfId="n0",
                     controllerStorePath=str(node_dir / "controller-store"), **cluster.controller)
    return {**props, **cluster.namesrv}


def controller_properties(cluster: ClusterSpec, index: int, ctl: ControllerLayout, node_dir: Path) -> dict[str, Any]:
    return {**ctl.group(), "controllerDLegerSelfId": f"n{index}",
            "controllerStorePath": str(node_dir / "controller-store"), **cluster.controller}


def broker_properties(cluster: ClusterSpec, listen: int, ha: int, store_root: Path, namesrv_addr: str,
                      ctl: ControllerLayout, group: str | None = None, host: str | None = None) -> dict[str, Any]:
    """A broker of broker set `group` (default `cluster.broker_name`: one set) on `host` (default the
    controllers')."""
    props: dict[str, Any] = {
        "brokerClusterName": cluster.cluster_name, "brokerName": group or cluster.broker_name, **BROKER_DEFAULTS,
        "controllerAddr": ";".join(ctl.addrs), "namesrvAddr": namesrv_addr, "brokerIP1": host or ctl.host,
        "brokerIP2": host or ctl.host, "listenPort": listen, "haListenPort": ha, "storePathRootDir": str(store_root),
        "storePathCommitLog": str(store_root / "commitlog"),
    }
    return {**props, **cluster.broker.common}
