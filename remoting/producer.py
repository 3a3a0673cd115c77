"""`Producer`: `DefaultMQProducer` / `DefaultMQProducerImpl.sendDefaultImpl` in SYNC mode for a named client profile.
One Producer is shared by many threads or greenlets (like one Java producer used by 64 threads), with one
connection per broker shared by all of them.

`send(message, timeout_ms)`: up to `1 + retryTimesWhenSendFailed` attempts; before each the budget is checked
(`timeout < cost` ends the loop with `RemotingTooMuchRequestException("sendDefaultImpl call timeout")`); each attempt
gets the whole remaining budget; remoting and client errors are retried on another broker where there is one;
broker codes in the profile's retry set are retried, others raise `MQBrokerException`; FLUSH_DISK_TIMEOUT,
FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE are returned (retried only with `retryAnotherBrokerWhenNotStoreOK`);
when every attempt failed, `MQClientException("Send [n] times, still failed, ...")` with the code of the last error.
Results and exceptions carry every attempt (broker, address, queue, code or error word, latency).

Each attempt's queue comes from the profile's `MQFaultStrategy` (`remoting.fault_strategy`; `self.fault`), which is
told after each attempt what it took and how it ended: with `send_latency_fault_enable` the sends avoid slow or
failing broker groups as the client version does; without it the choice is round robin over every group's queues,
a retry avoiding the last broker (docs/remoting.md, "Several broker groups")."""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field

from remoting.admin import heartbeat_body
from remoting.client import RemotingClient, now_ms
from remoting.codes import ClientErrorCode, RequestCode, ResponseCode
from remoting.command import RemotingCommand, make_request, next_opaque
from remoting.errors import (
    MQBrokerException,
    MQClientException,
    RemotingConnectException,
    RemotingError,
    RemotingTimeoutException,
    RemotingTooMuchRequestException,
    suggest_todo,
)
from remoting.fault_strategy import DETECT_PERIOD_S, MQFaultStrategy
from remoting.headers import GetMaxOffsetRequestHeader, SendMessageResponseHeader
from remoting.message import (
    COMPRESSED_FLAG,
    PROPERTY_MSG_REGION,
    PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    TRANSACTION_PREPARED_TYPE,
    Message,
    properties_to_string,
)
from remoting.message_id import create_uniq_id, local_ip_string
from remoting.namesrv import NameServerClient
from remoting.profiles import ClientProfile, resolve_profile
from remoting.route import MessageQueue, TopicPublishInfo
from remoting.route_table import RouteTable
from remoting.validators import check_message

log = logging.getLogger("rmq_chaos.producer")

SEND_STATUS_BY_CODE = {
    ResponseCode.SUCCESS: "SEND_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
}
DEFAULT_REGION_ID = "DefaultRegion"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
SEND_MESSAGE_V2 = int(RequestCode.SEND_MESSAGE_V2)
FIRST_HEARTBEAT_DELAY_S = 1.0  # MQClientInstance.startScheduledTask: heartbeat after 1000 ms


@dataclass(slots=True)
class Attempt:
    """One `sendKernelImpl` call: where it went and how it ended (`response_code` of an answer, or the outcome
    word of the error)."""

    broker_name: str
    addr: str | None
    queue_id: int
    response_code: int | None
    error: str | None
    latency_ms: float
    remark: str | None = None


@dataclass(slots=True)
class SendResult:
    """`SendResult` plus what a request record needs (`outcome`, `response_code`, `remark`, `addr`)."""

    status: str
    msg_id: str
    offset_msg_id: str
    broker_name: str
    queue_id: int
    queue_offset: int
    topic: str = ""
    addr: str = ""
    response_code: int = 0
    remark: str | None = None
    region_id: str = DEFAULT_REGION_ID
    trace_on: bool = True
    transaction_id: str | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return self.status


class Producer:
    """A producer for one group. `Producer(namesrv_addr, group, profile="java-4.9.1", **overrides)`; overrides are
    the profile settings (`retry_times_when_send_failed`, `send_msg_timeout_ms`, `retry_response_codes`,
    `send_latency_fault_enable`, ...). Close it (or use it as a context manager) to stop its background refresh and
    its connections. `fault` is its `MQFaultStrategy` (`fault.enabled`: Java's `setSendLatencyFaultEnable`)."""

    def __init__(self, namesrv_addr: str | list[str], group: str, profile: str | ClientProfile = "java-4.9.1", *,
                 instance_name: str | None = None, client_ip: str | None = None, heartbeat: bool = True,
                 client: RemotingClient | None = None, **overrides) -> None:
        self.profile = resolve_profile(profile, **overrides)
        self.group = group
        self.instance_name = instance_name or f"{os.getpid()}#{time.monotonic_ns()}"
        self.client_ip = client_ip or local_ip_string()
        # `client`: the connections of a client instance shared with other producers (one MQClientInstance per
        # clientId in Java: every producer of a JVM with the default instanceName shares its channels, so a sync
        # timeout that closes one fails the others' requests in flight); the producer does not close it
        self._owns_client = client is None
        self.client = client if client is not None else RemotingClient(namesrv_addr, rules=self.profile.rules())
        self.namesrv = NameServerClient(self.client, version=self.profile.version, language=self.profile.language,
                               serialize_type=self.profile.serialize_type)
        self.routes = RouteTable(self.namesrv, create_topic_key=self.profile.create_topic_key,
                                 default_topic_queue_nums=self.profile.default_topic_queue_nums,
                                 index_style=self.profile.index_style)
        self._heartbeat = heartbeat
        self._closed = False
        self._stop = threading.Event()
        self._background: threading.Thread | None = None
        self._background_lock = threading.Lock()
        self._v2_template: tuple[ClientProfile | None, str, dict[str, str | None]] = (None, "", {})
        p = self.profile
        self.fault = MQFaultStrategy(p.fault_strategy, enabled=p.send_latency_fault_enable, latency_max=p.latency_max,
                                     not_available_duration=p.not_available_duration,
                                     start_detector_enable=p.start_detector_enable)

    @property
    def client_id(self) -> str:
        """`buildMQClientId`: `clientIP@instanceName`."""
        return f"{self.client_ip}@{self.instance_name}"

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the background refresh and close every connection; later sends raise MQClientException."""
        self._closed = True
        self._stop.set()
        if self._background is not None and self._background is not threading.current_thread():
            self._background.join(timeout=5)
        if self._owns_client:
            self.client.shutdown()

    # -- send ---------------------------------------------------------------------------------------------------

    def send(self, message: Message, timeout_ms: float | None = None) -> SendResult:
        """Send synchronously; see the module docstring for what is returned and raised."""
        if self._closed:
            raise MQClientException.wrapping(f"The producer service state not OK, SHUTDOWN_ALREADY{suggest_todo()}",
                                             None)
        profile = self.profile
        timeout = profile.send_msg_timeout_ms if timeout_ms is None else timeout_ms
        check_message(message, profile.max_message_size)
        self._ensure_background()
        attempts: list[Attempt] = []
        begin_first = now_ms()
        try:
            info = self.routes.find_publish_info(message.topic)
        except RemotingError as e:
            e.msg_id = message.uniq_key
            raise
        if not info.ok():
            if not self.client.namesrv_addrs:
                error = MQClientException.wrapping(f"No name server address, please set it.{suggest_todo()}", None)
                error.response_code = ClientErrorCode.NO_NAME_SERVER_EXCEPTION
                raise error
            error = MQClientException.wrapping(f"No route info of this topic: {message.topic}{suggest_todo()}", None)
            error.response_code = ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION
            raise error
        times_total = 1 + profile.retry_times_when_send_failed
        brokers_sent: list[str | None] = [None] * times_total
        mq: MessageQueue | None = None
        exception: RemotingError | None = None
        result: SendResult | None = None
        call_timeout = False
        times = 0
        failed_at_ms: int | None = None
        fault = self.fault
        while times < times_total:
            last_broker = mq.broker_name if mq is not None else None
            mq = fault.select_one_message_queue(info, last_broker, times > 0)
            brokers_sent[times] = mq.broker_name
            # the JVM's client goes on within microseconds of a failure; this thread may run milliseconds later
            # (GIL, greenlets), which must not turn a next attempt into a call timeout
            begin_prev = now_ms() if failed_at_ms is None else failed_at_ms
            cost = begin_prev - begin_first
            if timeout < cost:
                call_timeout = True
                break
            # the attempt's start on the strategy's clock (`now_ms` unless a test hands in its own), at the JVM's
            # moment as `begin_prev` is; None while the switch is off (an attempt it was turned on during is not told)
            fault_begin = None
            if fault.enabled:
                fault_begin = fault.clock() if failed_at_ms is None else fault.clock() - (now_ms() - failed_at_ms)
            try:
                result = self._send_kernel(message, mq, info, timeout - cost, attempts)
                _tell(fault, mq.broker_name, fault_begin, None)
                if result.status != "SEND_OK" and profile.retry_another_broker_when_not_store_ok:
                    times += 1
                    continue
                result.attempts = attempts
                return result
            except MQBrokerException as e:
                _tell(fault, mq.broker_name, fault_begin, e)
                exception = e
                failed_at_ms = None
                if e.response_code in profile.retry_response_codes:
                    times += 1
                    continue
                if result is not None:
                    result.attempts = attempts
                    return result
                e.attempts, e.msg_id = attempts, message.uniq_key
                raise
            except RemotingError as e:  # RemotingException and MQClientException: resend at once
                _tell(fault, mq.broker_name, fault_begin, e)
                exception = e
                failed_at_ms = None if e.failed_at is None else int(e.failed_at * 1000)
                times += 1
                continue
        if result is not None:
            result.attempts = attempts
            return result
        if call_timeout:
            error: RemotingError = RemotingTooMuchRequestException("sendDefaultImpl call timeout")
        else:
            sent = "[" + ", ".join("null" if b is None else b for b in brokers_sent) + "]"
            info_text = (f"Send [{times}] times, still failed, cost [{now_ms() - begin_first}]ms, "
                         f"Topic: {message.topic}, BrokersSent: {sent}{suggest_todo()}")
            error = MQClientException.wrapping(info_text, exception)
            error.response_code = _client_error_code(exception)
        error.attempts, error.msg_id = attempts, message.uniq_key
        raise error

    def _send_kernel(self, message: Message, mq: MessageQueue, info: TopicPublishInfo, timeout: float,
                     attempts: list[Attempt]) -> SendResult:
        """`sendKernelImpl` + `MQClientAPIImpl.sendMessage` (SYNC): build SEND_MESSAGE_V2 and invoke it."""
        begin = now_ms()
        began = time.monotonic()
        addr = self.routes.master_addr(mq.broker_name)
        attempt = Attempt(mq.broker_name, addr, mq.queue_id, None, None, 0.0)
        attempts.append(attempt)
        try:
            if addr is None:
                self.routes.find_publish_info(mq.topic)
                addr = attempt.addr = self.routes.master_addr(mq.broker_name)
            if addr is None:
                raise MQClientException.wrapping(f"The broker[{mq.broker_name}] not exist", None)
            request = self._request(message, mq)
            cost = now_ms() - begin  # one reading for the check and the budget, as sendKernelImpl's costTimeSync
            if timeout < cost:
                raise RemotingTooMuchRequestException("sendKernelImpl call timeout")
            response = self.client.invoke_sync(addr, request, timeout - cost)
            attempt.response_code = response.code
            attempt.remark = response.remark
            return self._process_send_response(mq, message, response, addr)
        except RemotingError as e:
            attempt.error = type(e).__name__
            if isinstance(e, MQBrokerException):
                attempt.response_code = e.response_code
            else:
                attempt.remark = e.message
            raise
        finally:
            attempt.latency_ms = (time.monotonic() - began) * 1000.0

    def _request(self, message: Message, mq: MessageQueue) -> RemotingCommand:
        profile = self.profile
        props = message.properties
        if PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in props:
            props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = create_uniq_id()
        sys_flag = 0
        body = message.body
        if len(body) >= profile.compress_msg_body_over_howmuch:
            import zlib

            body = zlib.compress(body, profile.compress_level)
            sys_flag |= COMPRESSED_FLAG | profile.compression_type_flag
        prepared = props.get(PROPERTY_TRANSACTION_PREPARED)
        if prepared is not None and prepared.lower() == "true":
            sys_flag |= TRANSACTION_PREPARED_TYPE
        made_for, group, template = self._v2_template
        if made_for is not profile or group is not self.group:
            template = self._v2_fields(profile)
        fields = template.copy()
        fields["b"] = topic = message.topic
        fields["e"] = str(mq.queue_id)
        fields["f"] = str(sys_flag)
        fields["g"] = str(time.time_ns() // 1_000_000)
        fields["h"] = str(message.flag)
        fields["i"] = properties_to_string(props)
        if "n" in fields:
            fields["n"] = mq.broker_name
        if topic.startswith("%RETRY%"):  # sendKernelImpl: the retry counts travel in the header
            reconsume = props.pop("RECONSUME_TIME", None)
            max_reconsume = props.pop("MAX_RECONSUME_TIMES", None)
            if reconsume is not None or max_reconsume is not None:
                fields["i"] = properties_to_string(props)
                fields["j"] = reconsume if reconsume is not None else "0"
                if max_reconsume is not None:
                    fields["l"] = max_reconsume
                fields = dict(sorted(fields.items()))
        return RemotingCommand(SEND_MESSAGE_V2, profile.language, profile.version, next_opaque(), 0, None, fields,
                               body, profile.serialize_type, {})

    def _v2_fields(self, profile: ClientProfile) -> dict[str, str | None]:
        """SendMessageRequestHeaderV2's fields with this producer's constants and blanks for the rest: single letters,
        whose HashMap order is their alphabetical order (test_profile_wire_details_and_compression checks it against
        SendMessageRequestHeaderV2.to_fields()). A send copies it and fills in the blanks (a key put again keeps its
        place); it is made again when the profile or the group changed."""
        fields: dict[str, str | None] = {
            "a": self.group, "b": None, "c": profile.create_topic_key, "d": str(profile.default_topic_queue_nums),
            "e": None, "f": None, "g": None, "h": None, "i": None, "j": "0", "k": "false", "m": "false"}
        if profile.send_broker_name:
            fields["n"] = None
        self._v2_template = (profile, self.group, fields)
        return fields

    def _process_send_response(self, mq: MessageQueue, message: Message, response: RemotingCommand,
                               addr: str) -> SendResult:
        """`MQClientAPIImpl.processSendResponse`."""
        status = SEND_STATUS_BY_CODE.get(response.code)
        if status is None:
            raise MQBrokerException(response.code, response.remark, addr)
        ext = response.ext_fields
        header = SendMessageResponseHeader.from_fields(ext)
        if ext is None:
            ext = {}
        queue_id = header.queueId
        return SendResult(  # positional, in the field order (the send path's hottest constructor)
            status, message.uniq_key or "", header.msgId or "",
            mq.broker_name, mq.queue_id if queue_id is None else queue_id, header.queueOffset or 0, message.topic,
            addr, response.code, response.remark, ext.get(PROPERTY_MSG_REGION) or DEFAULT_REGION_ID,
            ext.get(PROPERTY_TRACE_SWITCH) != "false", header.transactionId, [])

    # -- background: route refresh and heartbeats ---------------------------------------------------------------

    def _ensure_background(self) -> None:
        if self._background is not None or self._closed:
            return
        with self._background_lock:
            if self._background is None:
                self._background = threading.Thread(target=self._background_loop, name="rmq-producer-background",
                                                    daemon=True)
                self._background.start()

    def _background_loop(self) -> None:
        poll_s = self.profile.poll_name_server_interval_ms / 1000.0
        beat_s = self.profile.heartbeat_broker_interval_ms / 1000.0
        next_poll = time.monotonic() + poll_s
        next_beat = time.monotonic() + FIRST_HEARTBEAT_DELAY_S
        # 5.x starts the detector's schedule with every producer and runs a round only with startDetectorEnable
        next_detect = time.monotonic() + DETECT_PERIOD_S if self.fault.start_detector_enable else float("inf")
        while not self._stop.wait(max(0.0, min(next_poll, next_beat, next_detect) - time.monotonic())):
            now = time.monotonic()
            if now >= next_poll:
                self.routes.refresh_all()
                next_poll = now + poll_s
            if now >= next_beat:
                if self._heartbeat:
                    self.send_heartbeats()
                next_beat = now + beat_s
            if now >= next_detect:
                try:
                    self.fault.tolerance.detect_one_round(self.routes.master_addr, self.detect)
                except Exception:  # Java's detector task logs and goes on, as the refresh must
                    log.exception("detecting service reachability failed")
                next_detect += DETECT_PERIOD_S

    def detect(self, addr: str, timeout_ms: int) -> bool:
        """5.x's `ServiceDetector`: GET_MAX_OFFSET of queue 0 of a topic this producer sends to (Java: the first key
        of its publish table, which may be TBW102; a broker answers any topic) answered with SUCCESS."""
        topics = self.routes.topics()
        if not topics:
            return False
        request = self.profile.request(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topics[0], 0).to_fields())
        try:
            return self.client.invoke_sync(addr, request, timeout_ms).code == ResponseCode.SUCCESS
        except RemotingError:
            return False

    def send_heartbeats(self) -> None:
        """`sendHeartbeatToAllBroker`: HEART_BEAT with this client's producer groups to every master."""
        body = heartbeat_body(self.client_id, [CLIENT_INNER_PRODUCER_GROUP, self.group])
        for addr in self.routes.master_addrs():
            request = make_request(RequestCode.HEART_BEAT, None, body, version=self.profile.version,
                                   language=self.profile.language, serialize_type=self.profile.serialize_type)
            try:
                self.client.invoke_sync(addr, request, 3000)
            except RemotingError:
                pass


def _tell(fault: MQFaultStrategy, broker_name: str, fault_begin: int | None, error: RemotingError | None) -> None:
    """`updateFaultItem` after an attempt: its latency ends where the JVM's would (`failed_at` of an error the
    connection dated: a timeout at its deadline, a send failed by a close at that close)."""
    if fault_begin is not None and fault.enabled:
        end = fault.clock()
        if error is not None and error.failed_at is not None:
            end -= max(0, now_ms() - int(error.failed_at * 1000))
        fault.record(broker_name, end - fault_begin, error)


def _client_error_code(exception: RemotingError | None) -> int:
    if isinstance(exception, MQBrokerException):
        return exception.response_code
    if isinstance(exception, RemotingConnectException):
        return ClientErrorCode.CONNECT_BROKER_EXCEPTION
    if isinstance(exception, RemotingTimeoutException):
        return ClientErrorCode.ACCESS_BROKER_TIMEOUT
    if isinstance(exception, MQClientException):
        return ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION
    return -1
