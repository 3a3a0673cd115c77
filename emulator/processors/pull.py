"""`PullMessageProcessor` (PULL_MESSAGE): messages of one queue from an offset, the stored bytes concatenated in the
body, status and suggested broker as 4.9.1 answers them. The group's subscription group config is auto-created; a
pull without the subscription flag needs the group registered by heartbeat with a subscription to the topic (else
SUBSCRIPTION_NOT_EXIST). Long polling: a pull with the suspend flag that finds nothing (PULL_NOT_FOUND) is held by
the `PullRequestHoldService` and run again without suspend when a message arrives or its suspend time is over. A
pull with the commit-offset flag commits `commitOffset` for the group on a master (not on a slave, not on the
re-run). A 4.9.1 slave without `slaveReadEnable` sets PULL_RETRY_IMMEDIATELY and then overwrites it with the
status's code, so it serves the messages it has (suggesting the master); the 5.x profiles keep the retry.

As 4.9.1's `readGetMessageResult` (messages copied through the heap, `transferMsgByHeap`), each found message's
sysFlag is read at `MessageDecoder.SYSFLAG_POSITION`: a consume-queue entry a read-only slave never wrote (offset 0,
size 0, its write position advanced anyway) yields an empty buffer there, and the pull is answered SYSTEM_ERROR with
`java.lang.IndexOutOfBoundsException`, as the real 4.9.1 slave answered the read-back after the fault."""
from __future__ import annotations

import time

from emulator.executor import RejectedExecution, RequestTask
from emulator.processors.context import BrokerContext
from emulator.pull_hold import HeldPull
from emulator.server import Channel, Processor
from emulator.topics import PERM_READ
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
COMMIT_OFFSET_FLAG = 0x1
SUSPEND_FLAG = 0x2
SUBSCRIPTION_FLAG = 0x4
SYSFLAG_POSITION = 4 + 4 + 4 + 4 + 4 + 8 + 8  # MessageDecoder.SYSFLAG_POSITION
STATUS_CODES = {
    "FOUND": ResponseCode.SUCCESS,
    "MESSAGE_WAS_REMOVING": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "NO_MATCHED_MESSAGE": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "OFFSET_FOUND_NULL": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_BADLY": ResponseCode.PULL_OFFSET_MOVED,
    "OFFSET_OVERFLOW_ONE": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_TOO_SMALL": ResponseCode.PULL_OFFSET_MOVED,
}


def _error(channel: Channel, request: RemotingCommand, code: int, remark: str) -> None:
    """An answer without messages: the response header is there, empty (the real 4.9.1 sends `extFields: {}`)."""
    channel.respond(request, code, remark, {})


class BufferIndexOutOfBounds(IndexError):
    """`ByteBuffer.getInt(index)` past a buffer's limit; `java_desc` is the remark the server answers with
    (`RemotingHelper.exceptionSimpleDesc` on the JDK 17 the real broker ran on)."""

    java_desc = "java.lang.IndexOutOfBoundsException, java.base/java.nio.Buffer.checkIndex(Buffer.java:749)"


class PullMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        """`ctx` may lack the consumer side (a unit test's context): pulls then need the subscription flag and are
        never held or committed."""
        self.ctx = ctx
        self.groups = getattr(ctx, "groups", None)
        self.consumers = getattr(ctx, "consumers", None)
        self.offsets = getattr(ctx, "offsets", None)
        self.pull_stats = getattr(ctx, "pull_stats", None)
        profile = getattr(ctx, "profile", None)
        self.slave_read_retry = bool(profile is not None and profile.is_5x)

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        self.process_request(channel, request, True)

    def wake_up(self, held: HeldPull) -> None:
        """`executeRequestWhenWakeup`: the held pull runs again on the pull pool, without suspend."""
        def run() -> None:
            try:
                self.process_request(held.channel, held.request, False)
            except Exception as e:
                held.channel.respond(held.request, ResponseCode.SYSTEM_ERROR,
                                     getattr(e, "java_desc", None) or f"{type(e).__name__}: {e}")
        executor = self.ctx.executors.get("pull")
        if executor is None:
            run()
            return
        try:
            executor.submit(RequestTask(run, lambda code, remark: held.channel.respond(held.request, code, remark)))
        except RejectedExecution:
            held.channel.respond(held.request, ResponseCode.SYSTEM_BUSY, "[OVERLOAD]system busy, start flow control "
                                 "for a while")

    def process_request(self, channel: Channel, request: RemotingCommand, allow_suspend: bool) -> None:
        ext = request.ext_fields or {}
        config = self.ctx.config
        topic = ext.get("topic", "")
        group = ext.get("consumerGroup", "")
        if not config.get_int("brokerPermission") & PERM_READ:
            _error(channel, request, ResponseCode.NO_PERMISSION,
                            f"the broker[{config.get('brokerIP1')}] pulling message is forbidden")
            return
        group_conf = self.groups.find(group) if self.groups is not None else {"consumeEnable": True}
        if group_conf is None:
            _error(channel, request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                            f"subscription group [{group}] does not exist, {FAQ}")
            return
        if not group_conf.get("consumeEnable", True):
            _error(channel, request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
            return
        sys_flag = int(ext.get("sysFlag", "0"))
        conf = self.ctx.topics.get(topic)
        if conf is None:
            _error(channel, request, ResponseCode.TOPIC_NOT_EXIST,
                            f"topic[{topic}] not exist, apply first please!{FAQ}")
            return
        if not conf.get("perm", PERM_READ) & PERM_READ:
            _error(channel, request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
            return
        queue_id = int(ext.get("queueId", "0"))
        if queue_id < 0 or queue_id >= conf["readQueueNums"]:
            _error(channel, request, ResponseCode.SYSTEM_ERROR,
                            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:["
                            f"{conf['readQueueNums']}] consumer:[{channel.remote_host}]")
            return
        if not sys_flag & SUBSCRIPTION_FLAG:
            info = self.consumers.group(group) if self.consumers is not None else None
            if info is None:
                _error(channel, request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                f"the consumer's group info not exist{FAQ}")
                return
            if info.message_model == "BROADCASTING" and not group_conf.get("consumeBroadcastEnable", True):
                _error(channel, request, ResponseCode.NO_PERMISSION,
                                f"the consumer group[{group}] can not consume by broadcast way")
                return
            sub = info.subscriptions.get(topic)
            if sub is None:
                _error(channel, request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                f"the consumer's subscription not exist{FAQ}")
                return
            if int(sub.get("subVersion", 0)) < int(ext.get("subVersion") or 0):
                _error(channel, request, ResponseCode.SUBSCRIPTION_NOT_LATEST,
                                "the consumer's subscription not latest")
                return
        offset = int(ext.get("queueOffset", "0"))
        max_nums = int(ext.get("maxMsgNums", "32"))
        status, next_begin, lo, hi, messages = self.ctx.store.get_message(
            topic, queue_id, offset, max_nums, config.get_int("maxTransferBytesOnMessageInMemory"))
        if status in ("NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"):
            code = ResponseCode.PULL_OFFSET_MOVED if offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = STATUS_CODES.get(status, ResponseCode.PULL_NOT_FOUND)
        if code == ResponseCode.PULL_OFFSET_MOVED and config.is_slave and not config.get_bool("offsetCheckInSlave"):
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
        if config.is_slave and not config.get_bool("slaveReadEnable") and self.slave_read_retry:
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            messages = []
        fields = {"suggestWhichBrokerId": "0", "nextBeginOffset": str(next_begin), "minOffset": str(lo),
                  "maxOffset": str(hi)}
        if code == ResponseCode.SUCCESS and config.get_bool("transferMsgByHeap") and \
                any(len(m) < SYSFLAG_POSITION + 4 for m in messages):
            raise BufferIndexOutOfBounds(f"index {SYSFLAG_POSITION} of a message buffer shorter than that")
        if code == ResponseCode.SUCCESS and self.pull_stats is not None:
            self.pull_stats.record(group, topic, len(messages))
        held = False
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and sys_flag & SUSPEND_FLAG and \
                getattr(self.ctx, "hold", None) is not None:
            timeout_ms = int(ext.get("suspendTimeoutMillis") or 0)
            if not config.get_bool("longPollingEnable"):
                timeout_ms = config.get_int("shortPollingTimeMills")
            self.ctx.hold.suspend(topic, queue_id, HeldPull(channel, request, timeout_ms, int(time.time() * 1000),
                                                            offset))
            held = True
        if allow_suspend and sys_flag & COMMIT_OFFSET_FLAG and not config.is_slave and self.offsets is not None:
            self.offsets.commit(channel.remote_host, group, topic, queue_id, int(ext.get("commitOffset") or 0))
        if held:
            return
        body = b"".join(messages) if code == ResponseCode.SUCCESS else b""
        channel.respond(request, code, status, fields, body)
