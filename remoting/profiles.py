"""Client profiles: what a given Java client version puts on the wire and how its `sendDefaultImpl` and
`invokeSync` behave (ROCKETMQ-FACTS B.1). Choose one by name and override single settings:
`resolve_profile("java-4.9.3", retry_response_codes={17, 14, 1, 16, 204, 205, 2})`."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from remoting.client import TransportRules
from remoting.codes import VERSION_V4_9_1, VERSION_V4_9_3, VERSION_V5_3_0, ResponseCode, SerializeType
from remoting.command import RemotingCommand, make_request
from remoting.fault_strategy import LATENCY_MAX_4_9, LATENCY_MAX_5_3, NOT_AVAILABLE_4_9, NOT_AVAILABLE_5_3
from remoting.message import COMPRESSION_ZLIB_TYPE

RETRY_CODES_4_9 = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
})
RETRY_CODES_5_3 = RETRY_CODES_4_9 | {ResponseCode.SYSTEM_BUSY}  # 5.3.0 (PR #5845); 5.3.1+ also adds GO_AWAY (1500)
OVERRIDABLE = ("retry_times_when_send_failed", "send_msg_timeout_ms", "retry_another_broker_when_not_store_ok",
               "retry_response_codes", "client_close_socket_if_timeout", "language", "compress_msg_body_over_howmuch",
               "max_message_size", "default_topic_queue_nums", "poll_name_server_interval_ms",
               "heartbeat_broker_interval_ms", "connect_timeout_ms", "serialize_type", "send_latency_fault_enable",
               "start_detector_enable", "latency_max", "not_available_duration")


@dataclass(frozen=True, slots=True)
class ClientProfile:
    """One Java client version's defaults. Field names are the Java settings in snake case."""

    name: str
    version: int
    """`MQVersion.CURRENT_VERSION` ordinal sent in every header."""
    retry_response_codes: frozenset[int]
    retry_times_when_send_failed: int = 2
    send_msg_timeout_ms: int = 3000
    retry_another_broker_when_not_store_ok: bool = False
    client_close_socket_if_timeout: bool = True
    language: str = "JAVA"
    compress_msg_body_over_howmuch: int = 4096
    compress_level: int = 5
    compression_type_flag: int = 0
    """5.x marks zlib bodies with COMPRESSION_ZLIB_TYPE in the sys flag; 4.9.x sets only COMPRESSED."""
    max_message_size: int = 4 * 1024 * 1024
    default_topic_queue_nums: int = 4
    create_topic_key: str = "TBW102"
    send_broker_name: bool = False
    """SendMessageRequestHeaderV2 field `n` (brokerName): 4.9.5+ and 5.1.0+."""
    index_style: str = "4.9"
    poll_name_server_interval_ms: int = 30_000
    heartbeat_broker_interval_ms: int = 30_000
    connect_timeout_ms: int = 3000
    serialize_type: SerializeType = SerializeType.JSON
    """Header serialization of requests (`rocketmq.serialize.type`: JSON or ROCKETMQ)."""
    send_latency_fault_enable: bool = False
    """`sendLatencyFaultEnable` (5.x: `sendLatencyEnable`, `-Dcom.rocketmq.sendLatencyEnable`): off in every version."""
    fault_strategy: str = "4.9"
    """Which `MQFaultStrategy` the version has (`remoting.fault_strategy`): "4.9" (4.9.1, 4.9.3) or "5.3"."""
    latency_max: tuple[int, ...] = LATENCY_MAX_4_9
    """`MQFaultStrategy.latencyMax` (ms)."""
    not_available_duration: tuple[int, ...] = NOT_AVAILABLE_4_9
    """`MQFaultStrategy.notAvailableDuration` (ms), one per `latency_max` step."""
    start_detector_enable: bool = False
    """5.1.4+ `startDetectorEnable` (`-Dcom.rocketmq.startDetectorEnable`): a detector probes avoided brokers."""
    transport: TransportRules = field(default_factory=TransportRules)

    def request(self, code: int, fields: dict[str, object] | None = None, body: bytes = b"") -> RemotingCommand:
        """A request as this client version sends it: its header version, language and header serialization."""
        return make_request(code, fields, body, version=self.version, language=self.language,
                            serialize_type=self.serialize_type)

    def rules(self) -> TransportRules:
        """The transport rules with this profile's overridable settings applied."""
        return dataclasses.replace(self.transport, close_socket_if_timeout=self.client_close_socket_if_timeout,
                                   connect_timeout_ms=self.connect_timeout_ms)


PROFILES: dict[str, ClientProfile] = {
    "java-4.9.1": ClientProfile("java-4.9.1", VERSION_V4_9_1, RETRY_CODES_4_9),
    "java-4.9.3": ClientProfile(
        "java-4.9.3", VERSION_V4_9_3, RETRY_CODES_4_9,
        transport=TransportRules(pre_send_timeout="invokeSync call the addr[{addr}] timeout"),
    ),
    "java-5.3": ClientProfile(
        "java-5.3", VERSION_V5_3_0, RETRY_CODES_5_3, compression_type_flag=COMPRESSION_ZLIB_TYPE,
        send_broker_name=True, index_style="5", fault_strategy="5.3", latency_max=LATENCY_MAX_5_3,
        not_available_duration=NOT_AVAILABLE_5_3,
        transport=TransportRules(pre_send_timeout="invokeSync call the addr[{addr}] timeout",
                                 timeout_when_nothing_left=True, min_close_left_ms=100, fail_inflight_on_eof=True),
    ),
}


def resolve_profile(name: str | ClientProfile = "java-4.9.1", **overrides) -> ClientProfile:
    """The named profile with `overrides` applied; unknown names or keys raise ValueError naming the allowed ones."""
    if isinstance(name, ClientProfile):
        profile = name
    else:
        try:
            profile = PROFILES[name]
        except KeyError:
            raise ValueError(f"unknown client profile {name!r}; allowed: {', '.join(PROFILES)}") from None
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise ValueError(f"unknown client setting(s) {', '.join(unknown)}; allowed: {', '.join(OVERRIDABLE)}")
    if "retry_response_codes" in overrides:
        overrides["retry_response_codes"] = frozenset(int(c) for c in overrides["retry_response_codes"])
    if "serialize_type" in overrides:
        value = overrides["serialize_type"]
        try:
            overrides["serialize_type"] = SerializeType[value] if isinstance(value, str) else SerializeType(value)
        except (KeyError, ValueError):
            raise ValueError(f"serialize_type {value!r}; allowed: JSON, ROCKETMQ") from None
    for key in ("latency_max", "not_available_duration"):
        if key in overrides:
            try:
                overrides[key] = tuple(int(v) for v in overrides[key])
            except (TypeError, ValueError):
                raise ValueError(f"{key} must be a list of milliseconds") from None
            if any(v < 0 for v in overrides[key]):
                raise ValueError(f"{key} must not hold negative milliseconds")
    if len(overrides.get("latency_max", profile.latency_max)) != len(
            overrides.get("not_available_duration", profile.not_available_duration)):
        raise ValueError("latency_max and not_available_duration must have the same length")
    if overrides.get("start_detector_enable") and profile.fault_strategy != "5.3":
        raise ValueError(f"start_detector_enable is a 5.1.4+ client setting; profile {profile.name} has none")
    if overrides.get("retry_times_when_send_failed", 0) < 0:
        raise ValueError("retry_times_when_send_failed must be >= 0")
    if overrides.get("send_msg_timeout_ms", 1) <= 0:
        raise ValueError("send_msg_timeout_ms must be > 0")
    return dataclasses.replace(profile, **overrides)
