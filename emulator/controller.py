"""`BrokerController`: builds one broker from its configuration (store, thread pools, processors, fast failure,
name-server registration every `registerNameServerPeriod` and at start-up, a slave's SlaveSynchronize from its
master every 10 s: topic configs, consumer offsets, delay offsets, subscription groups), the consumer side (consumer
manager with its 10 s channel scan, subscription groups, consumer offsets persisted every
`flushConsumerOffsetInterval` and at shutdown, long polling's hold service, the schedule service), starts it and
stops it. In 5.x controller mode the replicas manager (`emulator.autoswitch`) decides the role: the broker starts
fenced and isolated (no puts, no name-server registration) until the controller gave it an id and a role, the
slave-side sync follows the role, and NOTIFY_BROKER_ROLE_CHANGED, GET_BROKER_EPOCH_CACHE and GET_BROKER_HA_STATUS
are served."""
from __future__ import annotations

import threading
import time
import zlib

from emulator.config.broker_config import BrokerConfig, bind_address
from emulator.consumer_manager import SCAN_PERIOD_S, ConsumerManager
from emulator.consumer_offsets import ConsumerOffsetManager
from emulator.executor import BoundedExecutor
from emulator.fast_failure import BrokerFastFailure
from emulator.jvm_memory import JvmMemory
from emulator.logs import broker_log
from emulator.outbound import OutboundClient
from emulator.processors.admin import AdminProcessor
from emulator.processors.consumer_manage import ConsumerManageProcessor
from emulator.processors.context import BrokerContext
from emulator.processors.pull import PullMessageProcessor
from emulator.processors.replicas import ReplicasProcessor
from emulator.processors.send import SendMessageProcessor
from emulator.processors.send_back import ConsumerSendMsgBackProcessor
from emulator.pull_hold import PullRequestHoldService
from emulator.pull_stats import GroupGetStats
from emulator.safepoint import VMThread
from emulator.schedule import ScheduleMessageService
from emulator.server import RemotingServer
from emulator.store.message_store import MessageStore
from emulator.subscription_groups import SubscriptionGroupManager
from emulator.topics import TopicConfigManager
from emulator.version import VersionProfile
from remoting import fastjson
from remoting.codes import RequestCode
from remoting.command import make_request
from remoting.errors import (
    MQBrokerException,
    RemotingConnectException,
    RemotingError,
    RemotingSendRequestException,
    RemotingTimeoutException,
)

REGISTER_INITIAL_DELAY_S = 10.0
REGISTER_TIMEOUT_S = 6.0
SLAVE_SYNC_INITIAL_S = 3.0
SLAVE_SYNC_PERIOD_S = 10.0
SYNC_TIMEOUT_MS = 3000
"""BrokerOuterAPI's timeout for each of the slave's sync requests."""
SLAVE_SYNC_5X_INITIAL_S = 10.0
SLAVE_SYNC_5X_TICK_S = 3.0
SLAVE_SYNC_5X_AFTER_S = 60.0
"""A 5.x slave outside controller mode looks every 3 s (from 10 s after start) whether 60 s have passed since its
last sync (BrokerController's `lastSyncTimeMs`): about every 63 s. 4.x: every 10 s from 3 s."""
SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2)
CLIENT_CODES = (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT)
CONSUMER_MANAGE_CODES = (RequestCode.GET_CONSUMER_LIST_BY_GROUP, RequestCode.QUERY_CONSUMER_OFFSET,
                         RequestCode.UPDATE_CONSUMER_OFFSET)


class BrokerController:
    def __init__(self, config: BrokerConfig, profile: VersionProfile) -> None:
        self.config, self.profile = config, profile
        ip1 = config.get("brokerIP1") or "127.0.0.1"
        self.broker_addr = f"{ip1}:{config.get_int('listenPort')}"
        self.ha_server_addr = f"{config.get('brokerIP2') or ip1}:{config.get_int('haListenPort')}"
        self.memory = JvmMemory()
        self.store = MessageStore(config, profile, self.broker_addr)
        self.topics = TopicConfigManager(config)
        self.ctx = BrokerContext(config, profile, self.store, self.topics, self.memory, self.broker_addr)
        self.ctx.register_now = self.register_all
        self.ctx.consumers = ConsumerManager(lambda: config.get_bool("notifyConsumerIdsChangedEnable"))
        self.ctx.groups = SubscriptionGroupManager(config)
        self.ctx.offsets = ConsumerOffsetManager(config.get("storePathRootDir") or "")
        self.ctx.pull_stats = GroupGetStats()
        self.ctx.schedule = ScheduleMessageService(self.ctx)
        self.pull_processor = PullMessageProcessor(self.ctx)
        self.ctx.hold = PullRequestHoldService(
            lambda: config.get_bool("longPollingEnable"), lambda: config.get_int("shortPollingTimeMills"),
            self.store.max_offset_in_queue, self.pull_processor.wake_up)
        self.server = RemotingServer(bind_address(), config.get_int("listenPort"), "NettyServerCodecThread",
                                     profile.wire_version)
        self.outbound = OutboundClient(profile.wire_version)
        self._register_lock = threading.Lock()
        self.master_addr: str | None = None
        self.isolated = False
        """controller mode: not registered with the controller yet (no name-server registration, no heartbeats)"""
        self.replicas = None
        if config.controller_mode:
            from emulator.autoswitch.replicas_manager import ReplicasManager

            self.replicas = ReplicasManager(self)
        self.ctx.replicas = self.replicas
        self._stopped = threading.Event()
        self.fast_failure: BrokerFastFailure | None = None
        self.vm_thread = VMThread()

    def start(self) -> None:
        config = self.config
        self.memory.pre_touch()
        self.topics.load()
        self.ctx.groups.load()
        self.ctx.offsets.load()
        self.ctx.schedule.load()
        self.store.load_and_recover()
        send = BoundedExecutor("SendMessageThread", config.get_int("sendMessageThreadPoolNums"),
                               config.get_int("sendThreadPoolQueueCapacity"))
        pull = BoundedExecutor("PullMessageThread", config.get_int("pullMessageThreadPoolNums"),
                               config.get_int("pullThreadPoolQueueCapacity"))
        admin = BoundedExecutor("AdminBrokerThread", config.get_int("adminBrokerThreadPoolNums"), 10000)
        heartbeat = BoundedExecutor("HeartbeatThread", config.get_int("heartbeatThreadPoolNums"),
                                    config.get_int("heartbeatThreadPoolQueueCapacity"))
        consumer_manage = BoundedExecutor("ConsumerManageThread", config.get_int("consumerManageThreadPoolNums"),
                                          config.get_int("consumerManagerThreadPoolQueueCapacity"))
        self.ctx.executors.update(send=send, pull=pull, admin=admin, heartbeat=heartbeat,
                                  consumer_manage=consumer_manage)
        send_processor = SendMessageProcessor(self.ctx)
        for code in SEND_CODES:
            self.server.register(code, send_processor, send)
        self.server.register(RequestCode.CONSUMER_SEND_MSG_BACK, ConsumerSendMsgBackProcessor(self.ctx), send)
        self.server.register(RequestCode.PULL_MESSAGE, self.pull_processor, pull)
        for processor in (AdminProcessor(self.ctx), ReplicasProcessor(self.ctx)):
            for code in processor.codes:
                self.server.register(code, processor, admin)
        consumer_processor = ConsumerManageProcessor(self.ctx)
        for code in consumer_processor.codes:
            executor = heartbeat if code in CLIENT_CODES else consumer_manage if code in CONSUMER_MANAGE_CODES \
                else admin
            self.server.register(code, consumer_processor, executor)
        self.server.on_close.append(self.ctx.consumers.channel_closed)
        for ex in (send, pull, admin, heartbeat, consumer_manage):
            ex.start()
        if (not config.is_slave or config.controller_mode) and config.get_bool("longPollingEnable"):
            self.store.message_arriving = self.ctx.hold.notify_message_arriving
        self.ctx.hold.start()
        if not config.is_slave and not config.controller_mode:
            self.ctx.schedule.start()
        self.store.start()
        if self.replicas is not None:
            self.replicas.start()
        self.server.start()
        self.fast_failure = BrokerFastFailure(config, self.store, {
            "send": (send, "waitTimeMillsInSendQueue"), "pull": (pull, "waitTimeMillsInPullQueue"),
            "heartbeat": (heartbeat, "waitTimeMillsInHeartbeatQueue")})
        self.fast_failure.start()
        self.vm_thread.start()
        if not self.isolated:
            self.register_all()
        threading.Thread(target=self._register_loop, name="BrokerControllerScheduledThread", daemon=True).start()
        threading.Thread(target=self._persist_offsets_loop, name="ConsumerOffsetPersist", daemon=True).start()
        threading.Thread(target=self._housekeeping_loop, name="ClientHousekeepingScheduledThread",
                         daemon=True).start()
        if config.is_slave and not config.controller_mode:
            threading.Thread(target=self._slave_sync_loop, name="BrokerControllerScheduledThread1", daemon=True).start()

    def change_special_service(self, master: bool) -> None:
        """`changeSpecialServiceStatus`: the schedule service runs on a master (started at the first role change
        to master in controller mode)."""
        schedule = self.ctx.schedule
        if master and not schedule.is_alive() and not self._stopped.is_set():
            schedule.start()
            broker_log.info("ScheduleServiceStatus changed to true")

    def shutdown(self) -> None:
        self._stopped.set()
        if self.replicas is not None:
            self.replicas.shutdown()
        self.vm_thread.shutdown()
        if self.fast_failure is not None:
            self.fast_failure.shutdown()
        self.server.shutdown()
        self.ctx.hold.shutdown()
        self._unregister_all()
        self.ctx.offsets.persist()
        self.ctx.schedule.shutdown()
        if not self.config.is_slave or self.ctx.schedule.is_alive():
            self.ctx.schedule.persist()
        self.store.shutdown()
        self.outbound.close()

    # --- name server ------------------------------------------------------------------------------------------
    def namesrv_addrs(self) -> list[str]:
        return [a for a in (self.config.get("namesrvAddr") or "").split(";") if a]

    def register_all(self) -> None:
        with self._register_lock:
            self._register_all()

    def _register_all(self) -> None:
        body = fastjson.dumps({"filterServerList": [], "topicConfigSerializeWrapper": self.topics.wrapper()}).encode()
        fields = {"brokerAddr": self.broker_addr, "brokerId": self.config.get_int("brokerId"),
                  "brokerName": self.config.get("brokerName"), "clusterName": self.config.get("brokerClusterName"),
                  "haServerAddr": self.ha_server_addr, "compressed": False,
                  "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF}
        for addr in self.namesrv_addrs():
            try:
                response = self.outbound.invoke(addr, make_request(RequestCode.REGISTER_BROKER, fields, body),
                                                REGISTER_TIMEOUT_S)
            except OSError as e:
                broker_log.warning("registerBroker Exception, %s %s", addr, e)
                continue
            if response.code != 0:
                broker_log.warning("registerBroker to %s failed: %d %s", addr, response.code, response.remark)
                continue
            broker_log.info("register broker[%s]to name server %s OK", self.config.get_int("brokerId"), addr)
            ext = response.ext_fields or {}
            if self.config.is_slave:
                if ext.get("masterAddr"):
                    self.master_addr = ext["masterAddr"]
                client = self.store.ha.client
                if client is not None and ext.get("haServerAddr") and not self.config.get("haMasterAddress"):
                    client.update_master_address(ext["haServerAddr"])

    def _unregister_all(self) -> None:
        fields = {"brokerAddr": self.broker_addr, "brokerId": self.config.get_int("brokerId"),
                  "brokerName": self.config.get("brokerName"), "clusterName": self.config.get("brokerClusterName")}
        for addr in self.namesrv_addrs():
            try:
                self.outbound.invoke(addr, make_request(RequestCode.UNREGISTER_BROKER, fields), 3.0)
            except OSError:
                pass

    def _register_loop(self) -> None:
        wait = REGISTER_INITIAL_DELAY_S
        while not self._stopped.wait(wait):
            if self.isolated:
                broker_log.info("Skip register for broker is isolated")
            else:
                self.register_all()
            wait = max(10000, min(self.config.get_int("registerNameServerPeriod"), 60000)) / 1000.0

    def _persist_offsets_loop(self) -> None:
        """`ConsumerOffsetManager.persist` every `flushConsumerOffsetInterval` (10 s initial delay, as 4.9.1)."""
        if self._stopped.wait(10.0):
            return
        while not self._stopped.is_set():
            self.ctx.offsets.persist()
            if self._stopped.wait(self.config.get_int("flushConsumerOffsetInterval") / 1000.0):
                return

    def _housekeeping_loop(self) -> None:
        """`ClientHousekeepingService`: consumer channels without a heartbeat for 120 s, every 10 s."""
        while not self._stopped.wait(SCAN_PERIOD_S):
            self.ctx.consumers.scan_not_active()

    def _slave_sync_loop(self) -> None:
        if self.profile.is_5x:
            initial, tick, after = SLAVE_SYNC_5X_INITIAL_S, SLAVE_SYNC_5X_TICK_S, SLAVE_SYNC_5X_AFTER_S
        else:
            initial, tick, after = SLAVE_SYNC_INITIAL_S, SLAVE_SYNC_PERIOD_S, 0.0
        if self._stopped.wait(initial):
            return
        last = float("-inf")
        while not self._stopped.is_set():
            if self.master_addr and time.monotonic() - last > after:
                self.slave_synchronize(self.master_addr)
                last = time.monotonic()
            self._stopped.wait(tick)

    def slave_synchronize(self, master: str) -> None:
        """`SlaveSynchronize.syncAll`: topic configs, consumer offsets, delay offsets, subscription groups, each
        logged as the version does: `Update slave consumer offset from master, <addr>` and the delay offsets' line at
        every sync; the topic configs' when their data version changed (4.x) or at every sync (5.x); the
        subscription groups' when their data version changed; `SyncConsumerOffset Exception, <addr>` and the like
        when a step failed."""
        every = self.profile.is_5x
        steps = (
            ("SyncTopicConfig", "topic config", RequestCode.GET_ALL_TOPIC_CONFIG,
             lambda body: self.topics.replace_all(fastjson.loads(body)) or every),
            ("SyncConsumerOffset", "consumer offset", RequestCode.GET_ALL_CONSUMER_OFFSET,
             lambda body: self.ctx.offsets.replace_all(body) or True),
            ("SyncDelayOffset", "delay offset", RequestCode.GET_ALL_DELAY_OFFSET,
             lambda body: self._sync_delay_offsets(body) or True),
            ("SyncSubscriptionGroup", "Subscription Group", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
             lambda body: self.ctx.groups.replace_all(fastjson.loads(body))),
        )
        for name, what, code, apply in steps:
            try:
                response = self.outbound.invoke(master, make_request(code), SYNC_TIMEOUT_MS / 1000)
                if response.code != 0:
                    raise MQBrokerException(response.code, response.remark, master)
                if apply(response.body or b""):
                    broker_log.info("Update slave %s from master, %s", what, master)
            except (OSError, ValueError, MQBrokerException) as e:
                broker_log.error("%s Exception, %s\n%s", name, master, _as_java(e, master))

    def _sync_delay_offsets(self, body: bytes) -> None:
        schedule = self.ctx.schedule
        if schedule is not None:
            schedule.sync_from_master(body.decode("utf-8"))


def _as_java(error: Exception, addr: str) -> str:
    """The exception line a Java broker's remoting client logs for a failed sync request (the real 4.9.1's slave,
    its master killed: `RemotingConnectException: connect to <addr> failed`), in `remoting.errors`' words."""
    if isinstance(error, TimeoutError):
        error = RemotingTimeoutException.waiting(addr, SYNC_TIMEOUT_MS)
    elif isinstance(error, ConnectionRefusedError):
        error = RemotingConnectException(addr)
    elif isinstance(error, OSError):
        error = RemotingSendRequestException(addr)
    if isinstance(error, MQBrokerException):
        return f"org.apache.rocketmq.client.exception.MQBrokerException: {error}"
    if isinstance(error, RemotingError):
        return f"org.apache.rocketmq.remoting.exception.{type(error).__name__}: {error}"
    return str(error)
