"""A message consumed with RECONSUME_LATER goes back to the broker (`DefaultMQPushConsumerImpl.sendMessageBack`):
CONSUMER_SEND_MSG_BACK to the queue's master (offset = commitlog offset, the context's delay level, originMsgId =
the UNIQ_KEY, originTopic, maxReconsumeTimes); when that fails, the inner producer (`CLIENT_INNER_PRODUCER`, made
on first use, sharing the consumer's client) sends a copy to `%RETRY%<group>` with RETRY_TOPIC, RECONSUME_TIME,
MAX_RECONSUME_TIMES, ORIGIN_MESSAGE_ID and DELAY 3 + reconsume times. Difference: with no master address Java's
send-back goes to the name server and waits out its 5 s timeout; here it fails at once and takes the producer
path."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from remoting.codes import RequestCode
from remoting.consumer.client_instance import CLIENT_INNER_PRODUCER_GROUP, ClientInstance
from remoting.consumer.headers import ConsumerSendMsgBackRequestHeader
from remoting.consumer.stats import ConsumerCounters
from remoting.consumer.subscription import retry_topic
from remoting.errors import MQClientException, RemotingError
from remoting.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    Message,
)
from remoting.stored import MessageExt

if TYPE_CHECKING:
    from remoting.producer import Producer

log = logging.getLogger("rmq_chaos.consumer")

SEND_BACK_TIMEOUT_MS = 5000
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"


@dataclass(eq=False)
class SendBack:
    instance: ClientInstance
    group: str
    max_reconsume_times: int
    counters: ConsumerCounters
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _producer: Producer | None = field(default=None, init=False, repr=False)

    def send(self, msg: MessageExt, delay_level: int, broker_name: str) -> bool:
        """Send `msg` (pulled from a queue of `broker_name`) back; False when both ways failed."""
        origin_msg_id = msg.uniq_key or msg.msg_id  # MessageClientExt.getMsgId
        try:
            addr = self.instance.find_broker_addr_in_publish(broker_name)
            if addr is None:
                raise MQClientException(-1, f"The broker[{broker_name}] not exist")
            header = ConsumerSendMsgBackRequestHeader(
                offset=msg.commitlog_offset, group=self.group, delayLevel=delay_level, originMsgId=origin_msg_id,
                originTopic=msg.topic, unitMode=False, maxReconsumeTimes=self.max_reconsume_times)
            self.instance.ok(self.instance.invoke(addr, RequestCode.CONSUMER_SEND_MSG_BACK, header.to_fields(),
                                                  timeout_ms=SEND_BACK_TIMEOUT_MS), addr)
            self.counters.add("sent_back")
            return True
        except (RemotingError, MQClientException) as e:
            log.error("sendMessageBack Exception, %s: %s", self.group, e)
        try:
            props = dict(msg.properties)
            props.pop(PROPERTY_TRANSACTION_PREPARED, None)
            props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, origin_msg_id)
            props[PROPERTY_RETRY_TOPIC] = msg.topic
            props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
            props[PROPERTY_MAX_RECONSUME_TIMES] = str(self.max_reconsume_times)
            props[PROPERTY_DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
            self.producer().send(Message(retry_topic(self.group), msg.body, flag=msg.flag, properties=props))
            self.counters.add("sent_back_by_producer")
            return True
        except (RemotingError, MQClientException) as e:
            log.error("sendMessageBack exception, group: %s msg: %s: %s", self.group, origin_msg_id, e)
            return False

    def producer(self) -> Producer:
        """The inner producer, made on first use."""
        with self._lock:
            if self._producer is None:
                from remoting.producer import Producer

                instance = self.instance
                self._producer = Producer(instance.client.namesrv_addrs, CLIENT_INNER_PRODUCER_GROUP, instance.profile,
                                          instance_name=instance.instance_name, client_ip=instance.client_ip,
                                          heartbeat=False, client=instance.client)
            return self._producer

    def close(self) -> None:
        with self._lock:
            producer = self._producer
        if producer is not None:
            producer.close()
