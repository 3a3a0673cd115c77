"""`ClientManageProcessor` + `ConsumerManageProcessor` + the consumer half of `AdminBrokerProcessor`, as 4.9.1
answers them: HEART_BEAT (consumer data registered, subscription group and `%RETRY%<group>` topic auto-created),
UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, QUERY_CONSUMER_OFFSET (offset 0 when none is committed and the queue
still starts at 0, else QUERY_NOT_FOUND), UPDATE_CONSUMER_OFFSET (also on a slave, as 4.9.1), GET_CONSUME_STATS,
GET_ALL_CONSUMER_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG and GET_ALL_DELAY_OFFSET (what a slave syncs)."""
from __future__ import annotations

import time

from emulator.consumer_manager import ClientChannelInfo
from emulator.processors.context import BrokerContext
from emulator.server import Channel, CodeTableProcessor
from emulator.topics import PERM_READ, PERM_WRITE
from remoting import fastjson
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.consume_stats import ConsumeStats, OffsetWrapper, dump_consume_stats
from remoting.hashmap import java_string_hash, table_size
from remoting.route import MessageQueue

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
NOT_FOUND_REMARK = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
_MASK32 = 0xFFFFFFFF


def message_queue_hash(mq: MessageQueue) -> int:
    """`MessageQueue.hashCode()` as an unsigned 32-bit value."""
    h = 31 + java_string_hash(mq.broker_name)
    h = (31 * h + mq.queue_id) & _MASK32
    return (31 * h + java_string_hash(mq.topic)) & _MASK32


def hashmap_ordered_queues(queues: list[MessageQueue]) -> list[MessageQueue]:
    """The iteration order of a `HashMap<MessageQueue, ?>` the queues were put into in this order."""
    mask = table_size(len(queues)) - 1
    return sorted(queues, key=lambda mq: (message_queue_hash(mq) ^ (message_queue_hash(mq) >> 16)) & mask)


class ConsumerManageProcessor(CodeTableProcessor[BrokerContext]):
    HANDLERS = {
        RequestCode.HEART_BEAT: "_heartbeat",
        RequestCode.UNREGISTER_CLIENT: "_unregister",
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: "_consumer_list",
        RequestCode.QUERY_CONSUMER_OFFSET: "_query_offset",
        RequestCode.UPDATE_CONSUMER_OFFSET: "_update_offset",
        RequestCode.GET_CONSUME_STATS: "_consume_stats",
        RequestCode.GET_ALL_CONSUMER_OFFSET: "_all_offsets",
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: "_all_groups",
        RequestCode.GET_ALL_DELAY_OFFSET: "_all_delay_offsets",
    }

    # --- clients ------------------------------------------------------------------------------------------------
    def _heartbeat(self, channel: Channel, request: RemotingCommand) -> None:
        try:
            data = fastjson.loads(request.body) if request.body else {}
        except ValueError:
            data = {}
        client = ClientChannelInfo(data.get("clientID", channel.remote), 0, request.version,
                                   int(time.time() * 1000))
        for consumer in data.get("consumerDataSet") or []:
            group = consumer.get("groupName", "")
            group_conf = self.ctx.groups.find(group)
            notify = True
            if group_conf is not None:
                notify = bool(group_conf.get("notifyConsumerIdsChangedEnable", True))
                sys_flag = 1 if consumer.get("unitMode") else 0
                _conf, created = self.ctx.topics.create_in_send_back(
                    RETRY_GROUP_TOPIC_PREFIX + group, int(group_conf.get("retryQueueNums", 1)), PERM_WRITE | PERM_READ,
                    sys_flag)
                if created:
                    self.ctx.register_sync()
            self.ctx.consumers.register(group, channel, client, consumer, notify)
        channel.respond(request, ResponseCode.SUCCESS)

    def _unregister(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        group = ext.get("consumerGroup")
        if group:
            group_conf = self.ctx.groups.find(group)
            notify = bool(group_conf.get("notifyConsumerIdsChangedEnable", True)) if group_conf else True
            self.ctx.consumers.unregister(group, channel, notify)
        channel.respond(request, ResponseCode.SUCCESS, None, {})

    def _consumer_list(self, channel: Channel, request: RemotingCommand) -> None:
        group = (request.ext_fields or {}).get("consumerGroup", "")
        ids = self.ctx.consumers.client_ids(group)
        if not ids:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}", {})
            return
        channel.respond(request, ResponseCode.SUCCESS, None, {}, fastjson.dumps({"consumerIdList": ids}).encode())

    # --- offsets ------------------------------------------------------------------------------------------------
    def _query_offset(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        group, topic, queue_id = ext.get("consumerGroup", ""), ext.get("topic", ""), int(ext.get("queueId", "0"))
        offset = self.ctx.offsets.query(group, topic, queue_id)
        if offset < 0 and self.ctx.store.min_offset_in_queue(topic, queue_id) <= 0:
            offset = 0  # the queue still starts at 0 (and its first message is in memory): consume from there
        if offset < 0:
            channel.respond(request, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK, {})
            return
        channel.respond(request, ResponseCode.SUCCESS, None, {"offset": str(offset)})

    def _update_offset(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        self.ctx.offsets.commit(channel.remote_host, ext.get("consumerGroup", ""), ext.get("topic", ""),
                                int(ext.get("queueId", "0")), int(ext.get("commitOffset", "0")))
        channel.respond(request, ResponseCode.SUCCESS, None, {})

    def _consume_stats(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        group, topic = ext.get("consumerGroup", ""), ext.get("topic")
        topics = [topic] if topic else self.ctx.offsets.topics_of_group(group)
        broker_name = self.ctx.config.get("brokerName") or ""
        store = self.ctx.store
        stats = ConsumeStats()
        info = self.ctx.consumers.group(group)
        for name in topics:
            conf = self.ctx.topics.get(name)
            if conf is None:
                continue
            if info is not None and info.subscriptions and name not in info.subscriptions:
                continue  # "consumeStats, the consumer group[...], topic[...] not exist"
            queues = [MessageQueue(name, broker_name, i) for i in range(conf["writeQueueNums"])]
            for mq in queues:
                broker_offset = max(store.max_offset_in_queue(name, mq.queue_id), 0)
                consumer_offset = max(self.ctx.offsets.query(group, name, mq.queue_id), 0)
                last = store.store_timestamp(name, mq.queue_id, consumer_offset - 1) if consumer_offset > 0 else 0
                stats.offsets[mq] = OffsetWrapper(broker_offset, consumer_offset, last)
            stats.consume_tps += self.ctx.pull_stats.tps(group, name)
        stats.offsets = {mq: stats.offsets[mq] for mq in hashmap_ordered_queues(list(stats.offsets))}
        channel.respond(request, ResponseCode.SUCCESS, None, None, dump_consume_stats(stats))

    # --- what a slave syncs -------------------------------------------------------------------------------------
    def _all_offsets(self, channel: Channel, request: RemotingCommand) -> None:
        channel.respond(request, ResponseCode.SUCCESS, None, None, self.ctx.offsets.wrapper_json())

    def _all_groups(self, channel: Channel, request: RemotingCommand) -> None:
        channel.respond(request, ResponseCode.SUCCESS, None, None, fastjson.dumps(self.ctx.groups.wrapper()).encode())

    def _all_delay_offsets(self, channel: Channel, request: RemotingCommand) -> None:
        schedule = self.ctx.schedule
        body = schedule.offsets_json() if schedule is not None else '{"offsetTable":{}}'
        channel.respond(request, ResponseCode.SUCCESS, None, None, body.encode())
