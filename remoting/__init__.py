"""The RocketMQ remoting protocol in pure Python: frame codec, connections, name-server and admin calls,
a producer with the Java client's send semantics, a pull consumer and a push consumer. Depends on nothing else of ours and on
nothing outside the standard library. The public names below are importable from `remoting` directly (loaded on
first use, so `import remoting.codec` stays light for the emulator)."""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Producer": "producer", "SendResult": "producer", "Attempt": "producer",
    "Message": "message", "MessageExt": "stored", "encode_stored_message": "stored",
    "decode_stored_messages": "stored", "PullConsumer": "consumer", "PullResult": "consumer",
    "BrokerAdmin": "admin", "NameServerClient": "namesrv", "RemotingClient": "client",
    "TransportRules": "client", "RemotingCommand": "command", "make_request": "command",
    "make_response": "command", "outcome_of": "outcome", "resolve_profile": "profiles", "PROFILES": "profiles",
    "ClientProfile": "profiles", "AclCredentials": "acl", "TopicRouteData": "route", "ClusterInfo": "route",
    "java_hashmap_order": "hashmap", "RemotingError": "errors", "RemotingCommandException": "errors",
    "RemotingConnectException": "errors", "RemotingSendRequestException": "errors",
    "RemotingTimeoutException": "errors", "RemotingTooMuchRequestException": "errors",
    "MQClientException": "errors", "MQBrokerException": "errors",
    "PushConsumer": "consumer", "ConsumeContext": "consumer", "ConsumerStats": "consumer",
    "QueueStats": "consumer", "ProcessQueue": "consumer", "RemoteBrokerOffsetStore": "consumer",
    "allocate_averagely": "consumer",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'remoting' has no attribute {name!r}")
    return getattr(importlib.import_module(f"remoting.{module}"), name)
