"""`DLedgerServer`: one member of the controllers' DLedger group on its peer port. It answers the peers' VOTE,
HEART_BEAT and PUSH, runs the elector and the pusher, applies committed entries to the state machine in log order
(`StateMachineCaller`, on every member: that is how followers keep the controller state a new leader needs), and
offers `append_and_wait` to the leader's controller (False when not the leader or not committed in time)."""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

from emulator.controllermode.dledger.elector import LeaderElector, RoleHandler
from emulator.controllermode.dledger.ledger import Ledger
from emulator.controllermode.dledger.member_state import MemberState, Role
from emulator.controllermode.dledger.pusher import EntryPusher
from emulator.controllermode.dledger.rpc import HEART_BEAT, PUSH, VOTE, PeerClient
from emulator.logs import dledger_log
from emulator.server import Channel, Processor, RemotingServer
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand


class DLedgerServer(Processor):
    def __init__(self, group: str, self_id: str, peers: dict[str, str], store_base_dir: str, version: int,
                 apply: Callable[[bytes], None]) -> None:
        store = os.path.join(store_base_dir, f"dledger-{self_id}")
        self.state = MemberState(group, self_id, peers, store)
        self.ledger = Ledger(os.path.join(store, "data"))
        self.rpc = PeerClient(version)
        self.role_handlers: list[RoleHandler] = []
        self.elector = LeaderElector(self.state, self.ledger, self.rpc, self._role_changed)
        self.pusher = EntryPusher(self.state, self.ledger, self.rpc, self._committed)
        self._apply = apply
        self.applied_index = -1
        self._apply_wake = threading.Condition()
        self._stop = threading.Event()

    def register(self, server: RemotingServer) -> None:
        for code in (VOTE, HEART_BEAT, PUSH):
            server.register(code, self, None)

    def start(self) -> None:
        threading.Thread(target=self._apply_loop, name="StateMachineCaller", daemon=True).start()
        self.pusher.start()
        self.elector.start()

    def shutdown(self) -> None:
        self._stop.set()
        self.elector.shutdown()
        self.pusher.shutdown()
        with self._apply_wake:
            self._apply_wake.notify_all()
        self.rpc.close()
        self.ledger.close()

    def is_leader(self) -> bool:
        return self.state.is_leader()

    def append_and_wait(self, body: bytes, timeout_s: float) -> bool:
        """Append `body` as the leader and wait until it is committed and applied here."""
        entry = self.pusher.append(body)
        if entry is None:
            return False
        if not self.pusher.wait_committed(entry.index, timeout_s):
            dledger_log.warning("[%s] append of entry %d was not acknowledged by a quorum in time", self.state.self_id,
                                entry.index)
            return False
        with self._apply_wake:
            return self._apply_wake.wait_for(lambda: self.applied_index >= entry.index or self._stop.is_set(),
                                             timeout_s)

    # --- peer requests ----------------------------------------------------------------------------------------
    def process(self, channel: Channel, request: RemotingCommand) -> None:
        req = json.loads(request.body or b"{}")
        if req.get("group") != self.state.group:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, f"group {req.get('group')} is not {self.state.group}")
            return
        if request.code == VOTE:
            answer = self.elector.handle_vote(req)
        elif request.code == HEART_BEAT:
            answer = self.elector.handle_heartbeat(req)
        else:
            answer = self.pusher.handle_push(req)
        channel.respond(request, ResponseCode.SUCCESS, None, None, json.dumps(answer).encode())

    # --- internals --------------------------------------------------------------------------------------------
    def _role_changed(self, term: int, role: Role) -> None:
        if role is Role.LEADER:
            self.pusher.reset()
        for handler in self.role_handlers:
            handler(term, role)

    def _committed(self) -> None:
        with self._apply_wake:
            self._apply_wake.notify_all()

    def _apply_loop(self) -> None:
        while not self._stop.is_set():
            with self._apply_wake:
                self._apply_wake.wait_for(lambda: self.ledger.committed_index > self.applied_index
                                          or self._stop.is_set(), 1.0)
            while self.applied_index < self.ledger.committed_index and not self._stop.is_set():
                entry = self.ledger.get(self.applied_index + 1, 1)[0]
                if entry.body:
                    try:
                        self._apply(entry.body)
                    except Exception as e:  # a bad entry must not stop the log
                        dledger_log.error("apply of entry %d failed: %s", entry.index, e)
                with self._apply_wake:
                    self.applied_index = entry.index
                    self._apply_wake.notify_all()
