"""Admin calls to a broker (`MQClientAPIImpl`, as `mqadmin` makes them): UPDATE_AND_CREATE_TOPIC,
GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG, GET_BROKER_RUNTIME_INFO, GET_MAX_OFFSET / GET_MIN_OFFSET, HEART_BEAT,
UNREGISTER_CLIENT. A non-SUCCESS answer raises `MQBrokerException(code, remark, addr)` (topic creation:
`MQClientException(code, remark)`, as Java)."""
from __future__ import annotations

from remoting import fastjson, javaprops
from remoting.acl import AclCredentials
from remoting.broker_caller import BrokerCaller
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import MQClientException, RemotingCommandException
from remoting.headers import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    CreateTopicRequestHeader,
    UnregisterClientRequestHeader,
)
from remoting.profiles import ClientProfile

ADMIN_TIMEOUT_MS = 5000  # DefaultMQAdminExt.timeoutMillis


def heartbeat_body(client_id: str, producer_groups: list[str] = (), consumer_groups: list[dict] = ()) -> bytes:
    """`HeartbeatData` JSON. `consumer_groups` entries are ConsumerData dicts (groupName, consumeType, ...)."""
    doc = {"clientID": client_id, "consumerDataSet": list(consumer_groups),
           "producerDataSet": [{"groupName": g} for g in producer_groups]}
    return fastjson.dumps(doc).encode("utf-8")


class BrokerAdmin(BrokerCaller):
    """Typed admin calls. Pass `acl=AclCredentials(...)` to sign requests as `mqadmin` does."""

    def __init__(self, client: RemotingClient | None = None, *, profile: str | ClientProfile = "java-4.9.1",
                 acl: AclCredentials | None = None, timeout_ms: float = ADMIN_TIMEOUT_MS) -> None:
        super().__init__(client, profile, timeout_ms, acl=acl)

    def create_topic(self, addr: str, topic: str, read_queue_nums: int = 8, write_queue_nums: int = 8,
                     perm: int = 6, *, topic_filter_type: str = "SINGLE_TAG", topic_sys_flag: int = 0,
                     order: bool = False, default_topic: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
                     timeout_ms: float | None = None) -> None:
        """UPDATE_AND_CREATE_TOPIC (`mqadmin updateTopic`); failure: `MQClientException(code, remark)`."""
        header = CreateTopicRequestHeader(topic, default_topic, read_queue_nums, write_queue_nums, perm,
                                          topic_filter_type, topic_sys_flag, order)
        response = self.invoke(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_fields(), timeout_ms=timeout_ms)
        if response.code != ResponseCode.SUCCESS:
            raise MQClientException(response.code, response.remark or "")

    def get_broker_config(self, addr: str, timeout_ms: float | None = None) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's whole configuration."""
        response = self.ok(self.invoke(addr, RequestCode.GET_BROKER_CONFIG, timeout_ms=timeout_ms), addr)
        try:
            return javaprops.loads(response.body)
        except UnicodeDecodeError as e:
            raise RemotingCommandException(f"broker config body is not UTF-8: {e}") from None

    def update_broker_config(self, addr: str, properties: dict[str, object], timeout_ms: float | None = None) -> None:
        """UPDATE_BROKER_CONFIG (`mqadmin updateBrokerConfig`). Nothing is sent for an empty dict, as in Java."""
        body = javaprops.dumps(properties)
        if not body:
            return
        self.ok(self.invoke(addr, RequestCode.UPDATE_BROKER_CONFIG, None, body.encode("utf-8"), timeout_ms), addr)

    def get_runtime_info(self, addr: str, timeout_ms: float | None = None) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the KVTable as a dict."""
        response = self.ok(self.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO, timeout_ms=timeout_ms), addr)
        try:
            table = fastjson.loads(response.body).get("table") or {}
            return {str(k): str(v) for k, v in table.items()}
        except (ValueError, AttributeError, RecursionError, UnicodeDecodeError) as e:
            raise RemotingCommandException(f"runtime info body does not parse: {e}") from None

    def heartbeat(self, addr: str, client_id: str, producer_groups: list[str] = (),
                  consumer_groups: list[dict] = (), timeout_ms: float | None = None) -> int:
        """HEART_BEAT (`sendHearbeat`); returns the broker's version from the response."""
        body = heartbeat_body(client_id, producer_groups, consumer_groups)
        response = self.ok(self.invoke(addr, RequestCode.HEART_BEAT, None, body, timeout_ms), addr)
        return response.version

    def unregister_client(self, addr: str, client_id: str, producer_group: str | None = None,
                          consumer_group: str | None = None, timeout_ms: float | None = None) -> None:
        """UNREGISTER_CLIENT."""
        fields = UnregisterClientRequestHeader(client_id, producer_group, consumer_group).to_fields()
        self.ok(self.invoke(addr, RequestCode.UNREGISTER_CLIENT, fields, timeout_ms=timeout_ms), addr)
