"""The JSON bodies of the 5.x controller protocol, in fastjson's layout (keys sorted, nulls left out, Long map keys
bare): `SyncStateSet`, `BrokerReplicasInfo` (CONTROLLER_GET_SYNC_STATE_DATA, what `mqadmin getSyncStateSet` prints),
`ElectMasterResponseBody`, `EpochEntryCache` (GET_BROKER_EPOCH_CACHE, `mqadmin getBrokerEpoch`) and the HA runtime
info of GET_BROKER_HA_STATUS. Layouts as recorded from a real 5.3.0 controller and broker (docs/emulator.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

from remoting import fastjson

LONG_MAX = 2**63 - 1


def _drop_none(doc: dict) -> dict:
    return {k: v for k, v in sorted(doc.items()) if v is not None}


@dataclass(slots=True)
class SyncStateSet:
    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    def to_json(self) -> dict:
        return {"syncStateSet": sorted(self.sync_state_set), "syncStateSetEpoch": self.sync_state_set_epoch}

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_json()).encode()

    @classmethod
    def decode(cls, body: bytes | None) -> SyncStateSet:
        doc = fastjson.loads(body) if body else {}
        return cls({int(i) for i in doc.get("syncStateSet") or ()}, int(doc.get("syncStateSetEpoch") or 0))


@dataclass(slots=True)
class ReplicaIdentity:
    broker_name: str
    broker_id: int
    broker_address: str | None
    alive: bool | None = None

    def to_json(self) -> dict:
        return _drop_none({"alive": self.alive, "brokerAddress": self.broker_address, "brokerId": self.broker_id,
                           "brokerName": self.broker_name})

    @classmethod
    def from_json(cls, doc: dict) -> ReplicaIdentity:
        return cls(doc.get("brokerName", ""), int(doc.get("brokerId", -1)), doc.get("brokerAddress"),
                   doc.get("alive"))


@dataclass(slots=True)
class ReplicasInfo:
    """One broker set's entry of `BrokerReplicasInfo.replicasInfoTable`."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)
    not_in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)

    def to_json(self) -> dict:
        return _drop_none({
            "inSyncReplicas": [r.to_json() for r in self.in_sync_replicas], "masterAddress": self.master_address,
            "masterBrokerId": self.master_broker_id, "masterEpoch": self.master_epoch,
            "notInSyncReplicas": [r.to_json() for r in self.not_in_sync_replicas],
            "syncStateSetEpoch": self.sync_state_set_epoch})

    @classmethod
    def from_json(cls, doc: dict) -> ReplicasInfo:
        master = doc.get("masterBrokerId")
        return cls(None if master is None else int(master), doc.get("masterAddress"), int(doc.get("masterEpoch", 0)),
                   int(doc.get("syncStateSetEpoch", 0)),
                   [ReplicaIdentity.from_json(r) for r in doc.get("inSyncReplicas") or ()],
                   [ReplicaIdentity.from_json(r) for r in doc.get("notInSyncReplicas") or ()])

    @property
    def sync_state_set(self) -> set[int]:
        return {r.broker_id for r in self.in_sync_replicas}


def encode_replicas_info_table(table: dict[str, ReplicasInfo]) -> bytes:
    """`BrokerReplicasInfo` body."""
    return fastjson.dumps({"replicasInfoTable": {name: info.to_json() for name, info in table.items()}}).encode()


def decode_replicas_info_table(body: bytes | None) -> dict[str, ReplicasInfo]:
    doc = fastjson.loads(body) if body else {}
    return {name: ReplicasInfo.from_json(v) for name, v in (doc.get("replicasInfoTable") or {}).items()}


def encode_elect_master_body(sync_state_set: set[int], member_group: dict | None = None) -> bytes:
    """`ElectMasterResponseBody`: the new SyncStateSet and, for a new master, the `BrokerMemberGroup`
    (`{"brokerAddrs":{id:addr},"brokerName":..,"cluster":..}`)."""
    doc = _drop_none({"brokerMemberGroup": member_group, "syncStateSet": sorted(sync_state_set)})
    return fastjson.dumps(doc).encode()


@dataclass(slots=True)
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int = LONG_MAX

    def to_json(self) -> dict:
        return {"endOffset": self.end_offset, "epoch": self.epoch, "startOffset": self.start_offset}

    def __str__(self) -> str:
        return f"EpochEntry{{epoch={self.epoch}, startOffset={self.start_offset}, endOffset={self.end_offset}}}"


@dataclass(slots=True)
class EpochEntryCache:
    """GET_BROKER_EPOCH_CACHE's body: the broker's epoch file and its commitlog max offset."""

    cluster_name: str
    broker_name: str
    broker_id: int
    epoch_list: list[EpochEntry]
    max_offset: int

    def encode(self) -> bytes:
        return fastjson.dumps({"brokerId": self.broker_id, "brokerName": self.broker_name,
                               "clusterName": self.cluster_name, "epochList": [e.to_json() for e in self.epoch_list],
                               "maxOffset": self.max_offset}).encode()

    @classmethod
    def decode(cls, body: bytes) -> EpochEntryCache:
        doc = fastjson.loads(body)
        entries = [EpochEntry(int(e["epoch"]), int(e["startOffset"]), int(e.get("endOffset", LONG_MAX)))
                   for e in doc.get("epochList") or ()]
        return cls(doc.get("clusterName", ""), doc.get("brokerName", ""), int(doc.get("brokerId", -1)), entries,
                   int(doc.get("maxOffset", 0)))
