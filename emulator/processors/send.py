"""`SendMessageProcessor`: SEND_MESSAGE / SEND_MESSAGE_V2. It rejects before queueing when page
cache is busy or the transient store pool is empty (`rejectRequest`), checks the topic (auto-created from TBW102)
and queue id, stores the message (CLUSTER added, WAIT not stored; a DELAY level diverts it to
SCHEDULE_TOPIC_XXXX), and answers when the store's completion ends,
from whichever thread ends it, with 4.9.1's codes and remarks (`handlePutMessageResult`)."""
from __future__ import annotations

import random

from emulator.processors.context import BrokerContext
from emulator.server import Channel, Processor
from emulator.topics import PERM_WRITE
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.message import string_to_properties
from remoting.stored import encode_stored_message

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
V2_NAMES = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
            "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
            "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "brokerName"}
SEND_OK_STATUSES = {"PUT_OK": ResponseCode.SUCCESS, "FLUSH_DISK_TIMEOUT": ResponseCode.FLUSH_DISK_TIMEOUT,
                    "FLUSH_SLAVE_TIMEOUT": ResponseCode.FLUSH_SLAVE_TIMEOUT,
                    "SLAVE_NOT_AVAILABLE": ResponseCode.SLAVE_NOT_AVAILABLE}
ILLEGAL = ("the message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
           "msg properties length limit 32k.")


class SendMessageProcessor(Processor):
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.config = ctx.config

    def reject_request(self) -> bool:
        if self.ctx.profile.slave_rejects_send and self.config.is_slave:
            return True
        return self.store.is_os_page_cache_busy() or self.store.is_transient_store_pool_deficient()

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        if request.code == 310:
            ext = {V2_NAMES.get(k, k): v for k, v in ext.items()}
        region = self.config.get("regionId") or "DefaultRegion"
        base = {"MSG_REGION": region, "TRACE_ON": "true" if self.config.get_bool("traceOn") else "false"}
        topic = ext.get("topic", "")
        if not self.config.get_int("brokerPermission") & PERM_WRITE:
            channel.respond(request, ResponseCode.NO_PERMISSION,
                            f"the broker[{self.config.get('brokerIP1')}] sending message is forbidden", base)
            return
        conf = self.ctx.topics.get(topic)
        if conf is None:
            conf = self.ctx.topics.create_in_send(topic, ext.get("defaultTopic", ""),
                                                  int(ext.get("defaultTopicQueueNums", "4")), 0)
            if conf is not None:
                self.ctx.register_sync()
        if conf is None:
            channel.respond(request, ResponseCode.TOPIC_NOT_EXIST,
                            f"topic[{topic}] not exist, apply first please!{FAQ}", base)
            return
        queue_id = int(ext.get("queueId", "-1"))
        valid = max(conf["writeQueueNums"], conf["readQueueNums"])
        if queue_id >= valid:
            channel.respond(request, ResponseCode.SYSTEM_ERROR,
                            f"request queueId[{queue_id}] is illegal, {conf} Producer: {channel.remote_host}", base)
            return
        if queue_id < 0:
            queue_id = random.randrange(conf["writeQueueNums"])
        props = string_to_properties(ext.get("properties"))
        wait = props.get("WAIT", "true") != "false"
        props["CLUSTER"] = self.config.get("brokerClusterName") or "DefaultCluster"
        stored_props = {k: v for k, v in props.items() if k != "WAIT"}
        store_topic, store_qid = topic, queue_id
        if "DELAY" in stored_props:
            store_topic, store_qid = self._delayed(stored_props, topic, queue_id)
        body = request.body
        self.ctx.memory.allocate(body)
        try:
            encoded = bytearray(encode_stored_message(
                topic=store_topic, queue_id=store_qid, body=body, properties=stored_props, queue_offset=0,
                commitlog_offset=0, born_timestamp=int(ext.get("bornTimestamp", "0")),
                born_host=(channel.remote_host, channel.remote_port), store_timestamp=0,
                store_host=self.ctx.store_host, flag=int(ext.get("flag", "0")), sys_flag=int(ext.get("sysFlag", "0")),
                reconsume_times=int(ext.get("reconsumeTimes") or 0)))
        except ValueError:
            channel.respond(request, ResponseCode.MESSAGE_ILLEGAL, ILLEGAL, base)
            return
        completion = self.store.async_put_message(encoded, store_topic, store_qid, wait)
        completion.then(lambda value: self._respond(channel, request, base, queue_id, value))

    def _delayed(self, props: dict, topic: str, queue_id: int) -> tuple[str, int]:
        """`CommitLog.putMessage` of a message with a delay level: stored in SCHEDULE_TOPIC_XXXX queue level - 1, the
        real topic and queue in REAL_TOPIC / REAL_QID (the schedule service delivers it when its time is up)."""
        try:
            level = int(props["DELAY"])
        except ValueError:
            return topic, queue_id
        if level <= 0:
            return topic, queue_id
        schedule = getattr(self.ctx, "schedule", None)
        level = min(level, len(schedule.levels) if schedule is not None else 18)
        props["DELAY"] = str(level)
        props["REAL_TOPIC"], props["REAL_QID"] = topic, str(queue_id)
        return "SCHEDULE_TOPIC_XXXX", level - 1

    def _respond(self, channel: Channel, request: RemotingCommand, base: dict, queue_id: int, value) -> None:
        status, result = value
        code = SEND_OK_STATUSES.get(status)
        if code is not None:
            fields = dict(base)
            fields.update(msgId=result.msg_id, queueId=str(queue_id), queueOffset=str(result.logics_offset))
            channel.respond(request, code, None, fields)
            return
        if status == "CREATE_MAPEDFILE_FAILED":
            code, remark = ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
        elif status == "MESSAGE_ILLEGAL":
            code, remark = ResponseCode.MESSAGE_ILLEGAL, ILLEGAL
        elif status == "SERVICE_NOT_AVAILABLE":
            code = ResponseCode.SERVICE_NOT_AVAILABLE
            remark = ("service not available now. It may be caused by one of the following reasons: the broker's "
                      f"disk is full [{self.ctx.disk_ratio():.2f}], messages are put to the slave, message store has "
                      "been shut down, etc.")
        elif status == "IN_SYNC_REPLICAS_NOT_ENOUGH":  # 5.x controller mode, SendMessageProcessor ~397
            code, remark = ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough"
        elif status == "OS_PAGECACHE_BUSY":
            code = self.ctx.profile.pc_synchronized_code
            remark = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
        else:
            code, remark = ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"
        channel.respond(request, code, remark, base)
