"""Name-server calls (`MQClientAPIImpl`): GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO, to the name server
the `RemotingClient` has chosen (`addr=None`)."""
from __future__ import annotations

from remoting.client import RemotingClient
from remoting.codes import VERSION_V4_9_1, RequestCode, ResponseCode, SerializeType
from remoting.command import make_request
from remoting.errors import MQBrokerException, MQClientException
from remoting.headers import GetRouteInfoRequestHeader
from remoting.route import ClusterInfo, TopicRouteData

DEFAULT_TIMEOUT_MS = 3000


class NameServerClient:
    """Typed name-server calls over a `RemotingClient` that knows the name-server addresses."""

    def __init__(self, client: RemotingClient, *, version: int = VERSION_V4_9_1, language: str = "JAVA",
                 serialize_type: SerializeType = SerializeType.JSON) -> None:
        self.client = client
        self.version = version
        self.language = language
        self.serialize_type = serialize_type

    def get_route(self, topic: str, timeout_ms: float = DEFAULT_TIMEOUT_MS) -> TopicRouteData:
        """`getTopicRouteInfoFromNameServer`. A missing route raises `MQClientException(17, <remark>)`."""
        request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic).to_fields(),
                               version=self.version, language=self.language, serialize_type=self.serialize_type)
        response = self.client.invoke_sync(None, request, timeout_ms)
        if response.code == ResponseCode.SUCCESS and response.body:
            return TopicRouteData.from_json(response.body)
        raise MQClientException(response.code, response.remark or "")

    def get_cluster_info(self, timeout_ms: float = DEFAULT_TIMEOUT_MS) -> ClusterInfo:
        """`getBrokerClusterInfo`; a failure raises `MQBrokerException(code, remark)`."""
        request = make_request(RequestCode.GET_BROKER_CLUSTER_INFO, version=self.version, language=self.language,
                               serialize_type=self.serialize_type)
        response = self.client.invoke_sync(None, request, timeout_ms)
        if response.code == ResponseCode.SUCCESS:
            return ClusterInfo.from_json(response.body)
        raise MQBrokerException(response.code, response.remark)
