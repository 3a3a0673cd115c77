"""`RemoteBrokerOffsetStore`: a CLUSTERING group's consumed offsets, kept in memory by message queue and stored on
the broker. Reads from the broker with QUERY_CONSUMER_OFFSET (5 s), writes with UPDATE_CONSUMER_OFFSET one-way;
both go to the first address the route has for the queue's broker (`findBrokerAddressInAdmin`: the master while
it is in the route, else the slave), as 4.9.1 does."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.consumer.client_instance import resolve_addr
from remoting.consumer.headers import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from remoting.errors import MQBrokerException, MQClientException, RemotingError
from remoting.profiles import ClientProfile
from remoting.route import MessageQueue

log = logging.getLogger("rmq_chaos.consumer")
OFFSET_TIMEOUT_MS = 5000  # fetchConsumeOffsetFromBroker / updateConsumerOffsetOneway: 1000 * 5
NOT_FOUND = -1  # readOffset: the broker has no offset for the group (QUERY_NOT_FOUND)
READ_FAILED = -2  # readOffset: the broker could not be asked


class RemoteBrokerOffsetStore:
    """`find_admin_addr(broker_name)` -> address or None; `refresh_route(topic)` updates the route once when no
    address is known (both provided by the consumer)."""

    def __init__(self, client: RemotingClient, group: str, profile: ClientProfile,
                 find_admin_addr: Callable[[str], str | None], refresh_route: Callable[[str], object]) -> None:
        self.client = client
        self.group = group
        self.profile = profile
        self._find = find_admin_addr
        self._refresh = refresh_route
        self._table: dict[MessageQueue, int] = {}
        self._lock = threading.Lock()

    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """`updateOffset`."""
        with self._lock:
            old = self._table.get(mq)
            if old is None or not increase_only or offset > old:
                self._table[mq] = offset

    def read(self, mq: MessageQueue, from_store: bool) -> int:
        """`readOffset`: READ_FROM_MEMORY (-1 when unknown) or READ_FROM_STORE (asks the broker; -1 when it has
        none, -2 when it could not be asked)."""
        if not from_store:
            return self._table.get(mq, NOT_FOUND)
        try:
            offset = self.fetch(mq)
        except MQBrokerException:
            return NOT_FOUND
        except (RemotingError, MQClientException) as e:
            log.warning("fetchConsumeOffsetFromBroker exception, %s: %s", mq, e)
            return READ_FAILED
        self.update(mq, offset, False)
        return offset

    def fetch(self, mq: MessageQueue) -> int:
        """QUERY_CONSUMER_OFFSET; `MQBrokerException` for any answer but SUCCESS (22 QUERY_NOT_FOUND: no offset)."""
        addr = self._addr(mq)
        header = QueryConsumerOffsetRequestHeader(self.group, mq.topic, mq.queue_id)
        response = self.client.invoke_sync(addr, self.profile.request(RequestCode.QUERY_CONSUMER_OFFSET,
                                                                      header.to_fields()), OFFSET_TIMEOUT_MS)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerException(response.code, response.remark, addr)
        return int(QueryConsumerOffsetResponseHeader.from_fields(response.ext_fields).offset or 0)

    def persist_all(self, mqs: set[MessageQueue]) -> None:
        """`persistAll`: store every offset of an assigned queue; forget the others."""
        with self._lock:
            entries = list(self._table.items())
        for mq, offset in entries:
            if mq in mqs:
                self._send_update(mq, offset)
            else:
                with self._lock:
                    self._table.pop(mq, None)
                log.info("remove unused mq, %s, %s", mq, self.group)

    def persist(self, mq: MessageQueue) -> None:
        offset = self._table.get(mq)
        if offset is not None:
            self._send_update(mq, offset)

    def remove(self, mq: MessageQueue) -> None:
        with self._lock:
            self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        with self._lock:
            return dict(self._table)

    def _send_update(self, mq: MessageQueue, offset: int) -> None:
        try:
            addr = self._addr(mq)
            header = UpdateConsumerOffsetRequestHeader(self.group, mq.topic, mq.queue_id, offset)
            self.client.invoke_oneway(addr, self.profile.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                                                 header.to_fields()), OFFSET_TIMEOUT_MS)
        except (RemotingError, MQClientException) as e:
            log.error("updateConsumeOffsetToBroker exception, %s: %s", mq, e)

    def _addr(self, mq: MessageQueue) -> str:
        return resolve_addr(self._find, self._refresh, mq)
