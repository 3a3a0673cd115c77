"""Replication of the entry log (DLedger's `DLedgerEntryPusher`): while this member leads, one dispatcher thread per
follower pushes the entries the follower lacks (after the last one both hold, found by backing off) together with
the leader's commit index, at once when an entry is appended and at least every `PUSH_IDLE_S` otherwise; the
leader's quorum check commits the highest index a quorum holds whose entry is of the current term, and completes
the appends waiting for it (`maxWaitAckTimeMs`, 2.5 s, fails them). A follower takes pushes of the current term
only and moves its commit index up to what it holds."""
from __future__ import annotations

import threading
from collections.abc import Callable

from emulator.controllermode.dledger.ledger import Entry, Ledger
from emulator.controllermode.dledger.member_state import MemberState, Role
from emulator.controllermode.dledger.rpc import PUSH, PeerClient
from emulator.logs import dledger_log

PUSH_IDLE_S = 0.5
PUSH_TIMEOUT_MS = 1000  # DLedgerConfig.maxPushTimeOutMs
MAX_BATCH = 64
MAX_WAIT_ACK_S = 2.5  # DLedgerConfig.maxWaitAckTimeMs


class EntryPusher:
    def __init__(self, state: MemberState, ledger: Ledger, rpc: PeerClient, on_commit: Callable[[], None]) -> None:
        self.state, self.ledger, self.rpc, self.on_commit = state, ledger, rpc, on_commit
        self.match: dict[str, int] = {}
        self.cond = threading.Condition()
        self._stop = threading.Event()

    def start(self) -> None:
        for peer_id in self.state.peers:
            if peer_id != self.state.self_id:
                threading.Thread(target=self._dispatch_loop, args=(peer_id,), name=f"EntryDispatcher-{peer_id}",
                                 daemon=True).start()

    def shutdown(self) -> None:
        self._stop.set()
        with self.cond:
            self.cond.notify_all()

    # --- leader -------------------------------------------------------------------------------------------------
    def append(self, body: bytes) -> Entry | None:
        """Append `body` as the leader (None when not the leader) and wake the dispatchers."""
        st = self.state
        with st.lock:
            if not st.is_leader():
                return None
            entry = self.ledger.append(st.curr_term, body)
        self._check_quorum()
        with self.cond:
            self.cond.notify_all()
        return entry

    def wait_committed(self, index: int, timeout_s: float = MAX_WAIT_ACK_S) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.ledger.committed_index >= index or self._stop.is_set(), timeout_s) \
                and self.ledger.committed_index >= index

    def reset(self) -> None:
        """New leadership: every follower's match index is unknown again."""
        self.match = {}

    def _dispatch_loop(self, peer_id: str) -> None:
        next_index = None
        while not self._stop.is_set():
            st = self.state
            if st.role is not Role.LEADER:
                next_index = None
                self._stop.wait(0.05)
                continue
            term = st.curr_term
            if next_index is None:
                next_index = self.ledger.end_index + 1
            prev = next_index - 1
            entries = self.ledger.get(next_index, MAX_BATCH)
            answer = self.rpc.call(st.peers[peer_id], PUSH, {
                "group": st.group, "leaderId": st.self_id, "term": term, "prevIndex": prev,
                "prevTerm": self.ledger.term_at(prev), "commitIndex": self.ledger.committed_index,
                "entries": [[e.index, e.term, e.body.hex()] for e in entries]}, PUSH_TIMEOUT_MS)
            if answer is None:
                self._stop.wait(PUSH_IDLE_S)
                continue
            if answer.get("term", 0) > term:
                continue  # the elector's heartbeats will find the newer term
            if answer.get("notReady"):
                self._stop.wait(0.05)  # the follower has not taken this term's first heartbeat yet
                continue
            if answer.get("ok"):
                self.match[peer_id] = prev + len(entries)
                next_index = prev + len(entries) + 1
                self._check_quorum()
            else:
                next_index = max(0, min(next_index - 1, answer.get("endIndex", -1) + 1))
                continue
            with self.cond:
                if next_index > self.ledger.end_index and not self._stop.is_set():
                    self.cond.wait(PUSH_IDLE_S)

    def _check_quorum(self) -> None:
        st = self.state
        ledger = self.ledger
        with st.lock:
            if not st.is_leader():
                return
            held = sorted([ledger.end_index] + [self.match.get(p, -1) for p in st.peers if p != st.self_id],
                          reverse=True)
            quorum_index = held[len(st.peers) // 2]
            if quorum_index <= ledger.committed_index or ledger.term_at(quorum_index) != st.curr_term:
                return
            ledger.committed_index = quorum_index
        with self.cond:
            self.cond.notify_all()
        self.on_commit()

    # --- follower -----------------------------------------------------------------------------------------------
    def handle_push(self, req: dict) -> dict:
        st = self.state
        with st.lock:
            if req["term"] < st.curr_term:
                return {"term": st.curr_term, "ok": False, "endIndex": self.ledger.end_index}
            if req["term"] > st.curr_term or st.leader_id != req["leaderId"]:
                return {"term": st.curr_term, "ok": False, "endIndex": self.ledger.end_index, "notReady": True}
            entries = [Entry(i, t, bytes.fromhex(b)) for i, t, b in req["entries"]]
            ok = self.ledger.accept(req["prevIndex"], req["prevTerm"], entries)
            if ok:
                last = req["prevIndex"] + len(entries)
                commit = min(req["commitIndex"], last)
                if commit > self.ledger.committed_index:
                    self.ledger.committed_index = commit
            else:
                dledger_log.warning("[%s] push from %s does not match at %d, this log ends at %d", st.self_id,
                                    req["leaderId"], req["prevIndex"], self.ledger.end_index)
        if ok:
            self.on_commit()
        return {"term": st.curr_term, "ok": ok, "endIndex": self.ledger.end_index}
