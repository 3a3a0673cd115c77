"""`AdminBrokerProcessor`'s codes a producer, a pull consumer, mqadmin and a slave use: topic create and listing,
broker config get/update (live, file rewritten), runtime info, queue offsets. The consumer and client codes
(heartbeats, offsets, consume stats, what a slave syncs of them) are `consumer_manage.ConsumerManageProcessor`'s."""
from __future__ import annotations

import json

from emulator.config.broker_config import ConfigError
from emulator.config.properties import format_properties, parse_properties
from emulator.logs import broker_log
from emulator.processors.context import BrokerContext
from emulator.processors.runtime_info import runtime_table
from emulator.server import NOT_SET, Channel, CodeTableProcessor
from emulator.topics import topic_config
from remoting import fastjson
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand


class AdminProcessor(CodeTableProcessor[BrokerContext]):
    HANDLERS = {
        RequestCode.UPDATE_AND_CREATE_TOPIC: "_create_topic",
        RequestCode.GET_ALL_TOPIC_CONFIG: "_all_topics",
        RequestCode.UPDATE_BROKER_CONFIG: "_update_config",
        RequestCode.GET_BROKER_CONFIG: "_get_config",
        RequestCode.GET_BROKER_RUNTIME_INFO: "_runtime_info",
        RequestCode.GET_MAX_OFFSET: "_max_offset",
        RequestCode.GET_MIN_OFFSET: "_min_offset",
    }

    def _create_topic(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        topic = ext.get("topic", "")
        if topic == (self.ctx.config.get("brokerClusterName") or ""):
            channel.respond(request, ResponseCode.SYSTEM_ERROR,
                            f"the topic[{topic}] is conflict with system reserved words.")
            return
        conf = topic_config(topic, int(ext.get("readQueueNums", "8")), int(ext.get("writeQueueNums", "8")),
                            int(ext.get("perm", "6")), int(ext.get("topicSysFlag") or 0))
        self.ctx.topics.update(conf)
        self.ctx.register_sync()
        channel.respond(request, ResponseCode.SUCCESS, NOT_SET)

    def _all_topics(self, channel: Channel, request: RemotingCommand) -> None:
        channel.respond(request, ResponseCode.SUCCESS, None, {},
                        fastjson.dumps(self.ctx.topics.wrapper()).encode())

    def _update_config(self, channel: Channel, request: RemotingCommand) -> None:
        changes = parse_properties(request.body.decode("utf-8")) if request.body else {}
        broker_log.info("updateBrokerConfig called by %s", channel.remote)
        try:
            self.ctx.config.update(changes)
        except ConfigError as e:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, str(e))
            return
        for key, value in self.ctx.config.unknown.items():
            if key in changes:
                broker_log.warning("unknown property %s=%s ignored (not a RocketMQ %s key)", key, value,
                                   self.ctx.profile.release)
        broker_log.info("updateBrokerConfig, new config: [%s] client: %s ", changes, channel.remote)
        channel.respond(request, ResponseCode.SUCCESS)

    def _get_config(self, channel: Channel, request: RemotingCommand) -> None:
        body = format_properties(self.ctx.config.items()).encode("utf-8")
        channel.respond(request, ResponseCode.SUCCESS, None, {"version": self.ctx.config.data_version.to_json()},
                        body)

    def _runtime_info(self, channel: Channel, request: RemotingCommand) -> None:
        body = json.dumps({"table": runtime_table(self.ctx)}, separators=(",", ":")).encode()
        channel.respond(request, ResponseCode.SUCCESS, None, None, body)

    def _max_offset(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        offset = self.ctx.store.max_offset_in_queue(ext.get("topic", ""), int(ext.get("queueId", "0")))
        channel.respond(request, ResponseCode.SUCCESS, None, {"offset": str(offset)})

    def _min_offset(self, channel: Channel, request: RemotingCommand) -> None:
        ext = request.ext_fields or {}
        offset = self.ctx.store.min_offset_in_queue(ext.get("topic", ""), int(ext.get("queueId", "0")))
        channel.respond(request, ResponseCode.SUCCESS, None, {"offset": str(offset)})
