"""The RocketMQ remoting protocol in pure Python: frame codec, connections, name-server and admin calls,
a producer with the Java client's send semantics, a pull consumer and a push consumer. Depends on nothing else of ours and on
nothing outside the standard library. The public names below are importable from `remoting` directly (loaded on
first use, so `import remoting.codec` stays light for the emulator)."""
from __future__ import annotations

import importlib

_EXPORTS = {  # module of this package: the names it exports here
    "producer": ("Producer", "SendResult", "Attempt"),
    "message": ("Message",),
    "stored": ("MessageExt", "encode_stored_message", "decode_stored_messages"),
    "consumer": ("PullConsumer", "PullResult", "PushConsumer", "ConsumeContext", "ConsumerStats", "QueueStats",
                 "ProcessQueue", "RemoteBrokerOffsetStore", "allocate_averagely"),
    "admin": ("BrokerAdmin",),
    "namesrv": ("NameServerClient",),
    "client": ("RemotingClient", "TransportRules"),
    "command": ("RemotingCommand", "make_request", "make_response"),
    "outcome": ("outcome_of",),
    "profiles": ("resolve_profile", "PROFILES", "ClientProfile"),
    "acl": ("AclCredentials",),
    "route": ("TopicRouteData", "ClusterInfo"),
    "hashmap": ("java_hashmap_order",),
    "errors": ("RemotingError", "RemotingCommandException", "RemotingConnectException",
               "RemotingSendRequestException", "RemotingTimeoutException", "RemotingTooMuchRequestException",
               "MQClientException", "MQBrokerException"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'remoting' has no attribute {name!r}")
    return getattr(importlib.import_module(f"remoting.{module}"), name)
