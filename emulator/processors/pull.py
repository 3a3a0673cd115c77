"""`PullMessageProcessor` (PULL_MESSAGE): messages of one queue from an offset, the stored bytes concatenated in the
body, status and suggested broker as 4.9.1 answers them; a slave answers PULL_RETRY_IMMEDIATELY unless
`slaveReadEnable`. Long polling is not modelled: a pull that finds nothing is answered at once.

As 4.9.1's `readGetMessageResult` (messages copied through the heap, `transferMsgByHeap`), each found message's
sysFlag is read at `MessageDecoder.SYSFLAG_POSITION`: a consume-queue entry a read-only slave never wrote (offset 0,
size 0, its write position advanced anyway) yields an empty buffer there, and the pull is answered SYSTEM_ERROR with
`java.lang.IndexOutOfBoundsException`, as the real 4.9.1 slave answered the read-back after the fault."""
from __future__ import annotations

from emulator.processors.context import BrokerContext
from emulator.server import Channel, Processor
from emulator.topics import PERM_READ
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
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


class BufferIndexOutOfBounds(IndexError):
    """`ByteBuffer.getInt(index)` past a buffer's limit; `java_desc` is the remark the server answers with
    (`RemotingHelper.exceptionSimpleDesc` on the JDK 17 the real broker ran on)."""

    java_desc = "java.lang.IndexOutOfBoundsException, java.base/java.nio.Buffer.checkIndex(Buffer.java:749)"


class PullMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        config = self.ctx.config
        topic = ext.get("topic", "")
        group = ext.get("consumerGroup", "")
        if not config.get_int("brokerPermission") & PERM_READ:
            channel.respond(request, ResponseCode.NO_PERMISSION,
                            f"the broker[{config.get('brokerIP1')}] pulling message is forbidden")
            return
        sys_flag = int(ext.get("sysFlag", "0"))
        if not sys_flag & SUBSCRIPTION_FLAG and group not in self.ctx.consumer_groups:
            channel.respond(request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                            f"the consumer's group info not exist{FAQ}")
            return
        conf = self.ctx.topics.get(topic)
        if conf is None:
            channel.respond(request, ResponseCode.TOPIC_NOT_EXIST,
                            f"topic[{topic}] not exist, apply first please!{FAQ}")
            return
        queue_id = int(ext.get("queueId", "0"))
        if queue_id < 0 or queue_id >= conf["readQueueNums"]:
            channel.respond(request, ResponseCode.SYSTEM_ERROR,
                            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:["
                            f"{conf['readQueueNums']}] consumer:[{channel.remote_host}]")
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
        if config.is_slave and not config.get_bool("slaveReadEnable"):
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            messages = []
        fields = {"suggestWhichBrokerId": "0", "nextBeginOffset": str(next_begin), "minOffset": str(lo),
                  "maxOffset": str(hi)}
        if code == ResponseCode.SUCCESS and config.get_bool("transferMsgByHeap") and \
                any(len(m) < SYSFLAG_POSITION + 4 for m in messages):
            raise BufferIndexOutOfBounds(f"index {SYSFLAG_POSITION} of a message buffer shorter than that")
        body = b"".join(messages) if code == ResponseCode.SUCCESS else b""
        channel.respond(request, code, status, fields, body)
