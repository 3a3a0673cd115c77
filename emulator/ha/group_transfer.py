"""`GroupTransferService`: SYNC_MASTER requests wait here, one after another, until the slave's acknowledged offset
reaches theirs. 4.9.1 gives each request `syncFlushTimeout` from the moment the loop reaches it (so waits add up);
4.9.3 uses the deadline fixed at creation (`slaveTimeout`); 5.x counts acks of connections against `inSyncReplicas`
(and, in controller mode with `allAckInSyncStateSet`, waits for every member of the SyncStateSet: the auto-switch HA
service's `all_acked` decides).
The loop sleeps up to 1000 ms between checks unless an ack wakes it; timeouts are logged with the version's words."""
from __future__ import annotations

import time

from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.server import flush_gathered, responses_gathered
from emulator.service_thread import RequestServiceThread
from emulator.store.flush import GroupCommitRequest
from emulator.wakeup import Wakeup

WAIT_FOR_RUNNING_S = 0.010
ALL_ACK_IN_SYNC_STATE_SET = -1  # MixAll.ALL_ACK_IN_SYNC_STATE_SET
NOTIFY_WAIT_S = 1.0


class GroupTransferService(RequestServiceThread):
    def __init__(self, ha) -> None:
        super().__init__("GroupTransferService")
        self.ha = ha
        self.profile = ha.store.profile
        self.config = ha.store.config
        self.transfer = Wakeup()

    def notify_transfer_some(self) -> None:
        self.transfer.set()

    def shutdown(self) -> None:
        super().shutdown()
        self.transfer.set()

    def run(self) -> None:
        store_log.info("GroupTransferService service started")
        while not self.stopped:
            self.wait_for_running(WAIT_FOR_RUNNING_S)
            VM_STATE.poll()
            requests: list[GroupCommitRequest] = self.swap_requests()
            with responses_gathered():
                for req in requests:
                    self._wait(req)

    def _acked(self, req: GroupCommitRequest) -> bool:
        if req.ack_nums == ALL_ACK_IN_SYNC_STATE_SET:
            return self.ha.all_acked(req)
        if self.profile.is_5x and req.ack_nums > 1:
            acks = 1 + sum(1 for c in self.ha.connections() if c.slave_ack_offset >= req.next_offset)
            return acks >= req.ack_nums
        return self.ha.push2slave_max_offset >= req.next_offset

    def _wait(self, req: GroupCommitRequest) -> None:
        ok = self._acked(req)
        if self.profile.deadline_at_creation:
            until = req.deadline
        else:
            until = time.monotonic() + self.config.get_int("syncFlushTimeout") / 1000.0
        while not ok and time.monotonic() < until and not self.stopped:
            flush_gathered()  # the requests acknowledged so far are answered before this one waits
            if self.transfer.wait(NOTIFY_WAIT_S):
                self.transfer.clear()
            ok = self._acked(req)
        if not ok:
            line = self.profile.logs_transfer_timeout
            if line:
                store_log.warning(line.format(offset=req.next_offset, acks=req.ack_nums))
        req.wakeup_customer("PUT_OK" if ok else "FLUSH_SLAVE_TIMEOUT")
