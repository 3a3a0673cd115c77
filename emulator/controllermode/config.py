"""The controller's configuration (`ControllerConfig` at rocketmq-all-5.3.0), from a standalone controller.conf or
from a namesrv.conf with `enableControllerInNamesrv=true`. Key names and defaults are Apache's; the DLedger group
(`controllerDLegerGroup`, `controllerDLegerPeers` = `n0-ip:port;n1-ip:port`, `controllerDLegerSelfId`,
`controllerStorePath`) decides where the controller listens: controller requests are served on this node's DLedger
peer port, not on the name server's port (a real 5.3.0 namesrv answers CONTROLLER_GET_METADATA_INFO on its own port
with REQUEST_CODE_NOT_SUPPORTED)."""
from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULTS: dict[str, str] = {
    "controllerType": "DLedger",
    "scanNotActiveBrokerInterval": "5000",
    "controllerThreadPoolNums": "16",
    "controllerRequestThreadPoolQueueCapacity": "50000",
    "controllerDLegerGroup": "",
    "controllerDLegerPeers": "",
    "controllerDLegerSelfId": "",
    "mappedFileSize": str(1024 * 1024 * 1024),
    "controllerStorePath": "",
    "electMasterMaxRetryCount": "3",
    "enableElectUncleanMaster": "false",
    "isProcessReadEvent": "false",
    "notifyBrokerRoleChanged": "true",
    "scanInactiveMasterInterval": "5000",
    "metricsExporterType": "DISABLE",
    "configBlackList": "configBlackList;configStorePath",
}
"""ControllerConfig's own keys (5.3.0 defaults) that the emulator reads or reports."""


class ControllerConfigError(ValueError):
    """A controller configuration problem, phrased as the one line the program prints."""


@dataclass(frozen=True)
class Peer:
    id: str
    addr: str

    @property
    def port(self) -> int:
        return int(self.addr.rsplit(":", 1)[1])


class ControllerConfig:
    """Typed view of the controller keys; `values` keeps every key as text (GET_CONTROLLER_CONFIG)."""

    def __init__(self, given: dict[str, str], source: str) -> None:
        self.source = source
        self.values = dict(DEFAULTS)
        self.values.update({k: v.strip() for k, v in given.items()})
        if self.values.get("controllerType") != "DLedger":
            raise ControllerConfigError(f"{source}: controllerType={self.values['controllerType']!r} is not "
                                        "allowed; allowed values: DLedger (the emulator models the DLedger controller)")
        self.peers = parse_peers(self.values["controllerDLegerPeers"], source)
        self.self_id = self.values["controllerDLegerSelfId"]
        if self.self_id not in {p.id for p in self.peers}:
            raise ControllerConfigError(f"{source}: controllerDLegerSelfId={self.self_id!r} is not allowed; allowed "
                                        f"values: one of the ids in controllerDLegerPeers ({self.values['controllerDLegerPeers']})")
        self.group = self.values["controllerDLegerGroup"] or "default"
        store = self.values["controllerStorePath"] or os.path.join(os.path.expanduser("~"), "DLedgerController")
        self.store_path = store
        self.values["listenPort"] = str(self.self_peer.port)  # the controller's server listens on its peer port

    def get_int(self, key: str) -> int:
        return int(self.values[key])

    def get_bool(self, key: str) -> bool:
        return self.values.get(key, "").lower() == "true"

    @property
    def self_peer(self) -> Peer:
        return next(p for p in self.peers if p.id == self.self_id)

    @property
    def unclean_election(self) -> bool:
        return self.get_bool("enableElectUncleanMaster")

    def format_all(self) -> str:
        """GET_CONTROLLER_CONFIG's body: every key, sorted, `key=value` lines."""
        return "".join(f"{k}={v}\n" for k, v in sorted(self.values.items()))


def parse_peers(text: str, source: str) -> list[Peer]:
    """`n0-127.0.0.1:19878;n1-...` in the order given (DLedger's peer map)."""
    peers: list[Peer] = []
    for item in (p.strip() for p in text.split(";")):
        if not item:
            continue
        pid, _, addr = item.partition("-")
        host, _, port = addr.rpartition(":")
        if not pid or not host or not port.isdigit():
            raise ControllerConfigError(f"{source}: controllerDLegerPeers={text!r} is not allowed; allowed values: "
                                        "id-host:port entries separated by ';' (e.g. n0-127.0.0.1:9878)")
        peers.append(Peer(pid, addr))
    if not peers:
        raise ControllerConfigError(f"{source}: controllerDLegerPeers is empty; allowed values: id-host:port entries "
                                    "separated by ';' (e.g. n0-127.0.0.1:9878)")
    return peers
