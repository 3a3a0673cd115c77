"""CONSUMER_SEND_MSG_BACK (36), as 4.9.1's `SendMessageProcessor.asyncConsumerSendMsgBack`: the message at the
commitlog `offset` goes to `%RETRY%<group>` (auto-created: the group's retryQueueNums queues, perm 6) with delay
level `3 + reconsumeTimes` when the client says 0, or to `%DLQ%<group>` (1 queue, perm 2: write only) when its
reconsume times reach `maxReconsumeTimes` (the header's, 16 by default) or the level is negative; properties
`RETRY_TOPIC` (the first original topic), `ORIGIN_MESSAGE_ID` (the offset msg id of the first), `WAIT=false`,
reconsume times + 1. Answers SUCCESS with no remark, or 4.9.1's codes and remarks."""
from __future__ import annotations

import random

from emulator.processors.context import BrokerContext
from emulator.schedule import put_inner
from emulator.server import Channel, Processor
from emulator.topics import PERM_READ, PERM_WRITE
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.message import PROPERTY_DELAY_TIME_LEVEL, PROPERTY_RETRY_TOPIC, PROPERTY_WAIT_STORE_MSG_OK
from remoting.stored import decode_stored_message

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"
DLQ_NUMS_PER_GROUP = 1
VERSION_V3_4_9 = 66  # MQVersion.Version.V3_4_9.ordinal(): from it on the header's maxReconsumeTimes counts


class ConsumerSendMsgBackProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        config = self.ctx.config
        group = ext.get("group", "")
        group_conf = self.ctx.groups.find(group)
        if group_conf is None:
            channel.respond(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                            f"subscription group not exist, {group} {FAQ}")
            return
        if not config.get_int("brokerPermission") & PERM_WRITE:
            channel.respond(request, ResponseCode.NO_PERMISSION,
                            f"the broker[{config.get('brokerIP1')}] sending message is forbidden")
            return
        retry_queues = int(group_conf.get("retryQueueNums", 1))
        if retry_queues <= 0:
            channel.respond(request, ResponseCode.SUCCESS)
            return
        topic = RETRY_PREFIX + group
        queue_id = random.randrange(retry_queues)
        sys_flag = 1 if ext.get("unitMode") == "true" else 0
        conf, created = self.ctx.topics.create_in_send_back(topic, retry_queues, PERM_WRITE | PERM_READ, sys_flag)
        if created:
            self.ctx.register_sync()
        if not conf["perm"] & PERM_WRITE:
            channel.respond(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
            return
        offset = int(ext.get("offset", "-1"))
        raw = self._message_at(offset)
        if raw is None:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {offset}")
            return
        msg, _ = decode_stored_message(raw)
        props = dict(msg.properties)
        props.setdefault(PROPERTY_RETRY_TOPIC, msg.topic)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
        delay_level = int(ext.get("delayLevel") or 0)
        max_reconsume = int(group_conf.get("retryMaxTimes", 16))
        if request.version >= VERSION_V3_4_9 and ext.get("maxReconsumeTimes") is not None:
            max_reconsume = int(ext["maxReconsumeTimes"])
        if msg.reconsume_times >= max_reconsume or delay_level < 0:
            topic = DLQ_PREFIX + group
            queue_id = random.randrange(DLQ_NUMS_PER_GROUP)
            conf, created = self.ctx.topics.create_in_send_back(topic, DLQ_NUMS_PER_GROUP, PERM_WRITE, 0)
            if created:
                self.ctx.register_sync()
            to_dlq = True
        else:
            to_dlq = False
            if delay_level == 0:
                delay_level = 3 + msg.reconsume_times
            props[PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
        props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        done = put_inner(self.ctx, topic=topic, queue_id=queue_id, body=msg.body, properties=props,
                         born_timestamp=msg.born_timestamp, born_host=msg.born_host, flag=msg.flag,
                         sys_flag=msg.sys_flag, reconsume_times=msg.reconsume_times + 1, divert=not to_dlq)
        done.then(lambda value: self._respond(channel, request, value))

    def _message_at(self, offset: int) -> bytes | None:
        """`lookMessageByOffset`: the stored message at a commitlog offset (its size read first)."""
        if offset < 0:
            return None
        head = self.ctx.store.commitlog.get_message(offset, 4)
        if head is None:
            return None
        size = int.from_bytes(head, "big", signed=True)
        if size <= 4:
            return None
        return self.ctx.store.commitlog.get_message(offset, size)

    @staticmethod
    def _respond(channel: Channel, request: RemotingCommand, value) -> None:
        status, _result = value
        if status in ("PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"):
            channel.respond(request, ResponseCode.SUCCESS)
        else:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, status)
