"""`DLedgerLeaderElector` (dledger 0.3.1.2, what RocketMQ 5.3.0's controller runs): a state-maintainer thread that
every 10 ms acts on this member's role. A leader heartbeats every follower every `heartBeatTimeIntervalMs` (2 s)
and steps down to candidate when no quorum answered for `maxHeartBeatLeak` (3) intervals; a follower becomes a
candidate when its leader has not heartbeated it for 3 intervals (6 s); a candidate asks every member for its vote
after a random 300-1000 ms, in a new term when the last round asked for that, and becomes leader on a quorum of
ACCEPT. A member refuses its vote to a candidate whose log ends in an older term, or in the same term at a smaller
index, so a new leader holds every committed entry. Log lines are DLedger's."""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait

from emulator.controllermode.dledger.ledger import Ledger
from emulator.controllermode.dledger.member_state import MemberState, Role
from emulator.controllermode.dledger.rpc import HEART_BEAT, VOTE, PeerClient
from emulator.logs import dledger_log

HEARTBEAT_INTERVAL_MS = 2000
MAX_HEARTBEAT_LEAK = 3
MIN_VOTE_INTERVAL_MS = 300
MAX_VOTE_INTERVAL_MS = 1000
STATE_MAINTAINER_PERIOD_S = 0.010

ACCEPT, REJECT_ALREADY_VOTED, REJECT_ALREADY_HAS_LEADER = "ACCEPT", "REJECT_ALREADY_VOTED", "REJECT_ALREADY_HAS_LEADER"
REJECT_EXPIRED_VOTE_TERM, REJECT_TERM_NOT_READY = "REJECT_EXPIRED_VOTE_TERM", "REJECT_TERM_NOT_READY"
REJECT_EXPIRED_LEDGER_TERM, REJECT_SMALL_LEDGER_END_INDEX = "REJECT_EXPIRED_LEDGER_TERM", "REJECT_SMALL_LEDGER_END_INDEX"
REJECT_TERM_SMALL_THAN_LEDGER, REJECT_UNKNOWN_LEADER = "REJECT_TERM_SMALL_THAN_LEDGER", "REJECT_UNKNOWN_LEADER"
SUCCESS, EXPIRED_TERM, TERM_NOT_READY, INCONSISTENT_LEADER = 200, 406, 408, 409

RoleHandler = Callable[[int, Role], None]


def _now_ms() -> float:
    return time.time() * 1000


class LeaderElector:
    def __init__(self, state: MemberState, ledger: Ledger, rpc: PeerClient, on_role_change: RoleHandler) -> None:
        self.state, self.ledger, self.rpc, self.on_role_change = state, ledger, rpc, on_role_change
        self.last_leader_heartbeat = -1.0
        self.last_send_heartbeat = -1.0
        self.last_succ_heartbeat = -1.0
        self.next_time_to_vote = -1.0
        self.need_increase_term = False
        self.last_parse_result = "WAIT_TO_REVOTE"
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._maintain_loop, name="StateMaintainer", daemon=True).start()

    def shutdown(self) -> None:
        self._stop.set()

    # --- RPC handlers ---------------------------------------------------------------------------------------
    def handle_heartbeat(self, req: dict) -> dict:
        st = self.state
        leader, term = req["leaderId"], req["term"]
        if leader not in st.peers or leader == st.self_id:
            return {"term": st.curr_term, "code": 502}
        with st.lock:
            if term < st.curr_term:
                return {"term": st.curr_term, "code": EXPIRED_TERM}
            if term == st.curr_term:
                if st.leader_id is None:
                    self._change_to_follower(term, leader)
                    return {"term": term, "code": SUCCESS}
                if st.leader_id == leader:
                    self.last_leader_heartbeat = _now_ms()
                    return {"term": term, "code": SUCCESS}
                dledger_log.error("[%s][BUG] currTerm %d has leader %s, but received leader %s", st.self_id,
                                  st.curr_term, st.leader_id, leader)
                return {"term": st.curr_term, "code": INCONSISTENT_LEADER}
            self.change_to_candidate(term)
            self.need_increase_term = True
            return {"term": st.curr_term, "code": TERM_NOT_READY}

    def handle_vote(self, req: dict, self_vote: bool = False) -> dict:
        st = self.state
        with st.lock:
            if req["leaderId"] not in st.peers:
                return {"term": st.curr_term, "voteResult": REJECT_UNKNOWN_LEADER}
            if req["ledgerEndTerm"] < self.ledger.end_term:
                return {"term": st.curr_term, "voteResult": REJECT_EXPIRED_LEDGER_TERM}
            if req["ledgerEndTerm"] == self.ledger.end_term and req["ledgerEndIndex"] < self.ledger.end_index:
                return {"term": st.curr_term, "voteResult": REJECT_SMALL_LEDGER_END_INDEX}
            if req["term"] < st.curr_term:
                return {"term": st.curr_term, "voteResult": REJECT_EXPIRED_VOTE_TERM}
            if req["term"] == st.curr_term:
                if st.vote_for not in (None, req["leaderId"]):
                    result = REJECT_ALREADY_HAS_LEADER if st.leader_id is not None else REJECT_ALREADY_VOTED
                    return {"term": st.curr_term, "voteResult": result}
            else:
                self.change_to_candidate(req["term"])
                self.need_increase_term = True
                return {"term": st.curr_term, "voteResult": REJECT_TERM_NOT_READY}
            if req["term"] < self.ledger.end_term:
                return {"term": self.ledger.end_term, "voteResult": REJECT_TERM_SMALL_THAN_LEDGER}
            st.set_vote_for(req["leaderId"])
            return {"term": st.curr_term, "voteResult": ACCEPT}

    # --- role changes ----------------------------------------------------------------------------------------
    def change_to_candidate(self, term: int) -> None:
        st = self.state
        with st.lock:
            if term >= st.curr_term:
                st.change_to_candidate(term)
                self.on_role_change(term, Role.CANDIDATE)
                dledger_log.info("[%s] [ChangeRoleToCandidate] from term: %d and currTerm: %d", st.self_id, term,
                                 st.curr_term)

    def _change_to_follower(self, term: int, leader: str) -> None:
        st = self.state
        dledger_log.info("[%s][ChangeRoleToFollower] from term: %d leaderId: %s and currTerm: %d", st.self_id, term,
                         leader, st.curr_term)
        self.last_parse_result = "WAIT_TO_REVOTE"
        st.change_to_follower(term, leader)
        self.last_leader_heartbeat = _now_ms()
        self.on_role_change(term, Role.FOLLOWER)

    def _change_to_leader(self, term: int) -> None:
        st = self.state
        with st.lock:
            if st.curr_term != term:
                return
            st.change_to_leader(term)
            self.last_send_heartbeat = -1
            self.on_role_change(term, Role.LEADER)
            dledger_log.info("[%s] [ChangeRoleToLeader] from term: %d and currTerm: %d", st.self_id, term,
                             st.curr_term)

    # --- the state maintainer ---------------------------------------------------------------------------------
    def _maintain_loop(self) -> None:
        while not self._stop.is_set():
            try:
                role = self.state.role
                if role is Role.LEADER:
                    self._maintain_as_leader()
                elif role is Role.FOLLOWER:
                    self._maintain_as_follower()
                else:
                    self._maintain_as_candidate()
            except Exception as e:  # the Java maintainer logs and goes on
                dledger_log.error("Error in maintaining state %s", e)
            self._stop.wait(STATE_MAINTAINER_PERIOD_S)

    def _maintain_as_leader(self) -> None:
        if _now_ms() - self.last_send_heartbeat <= HEARTBEAT_INTERVAL_MS:
            return
        st = self.state
        with st.lock:
            if not st.is_leader():
                return
            term = st.curr_term
            self.last_send_heartbeat = _now_ms()
        others = [i for i in st.peers if i != st.self_id]
        futures = [self.rpc.submit(st.peers[i], HEART_BEAT, {"group": st.group, "leaderId": st.self_id,
                                                               "term": term}, HEARTBEAT_INTERVAL_MS) for i in others]
        done, _ = wait(futures, timeout=HEARTBEAT_INTERVAL_MS / 1000.0)
        answers = [f.result() for f in done if f.result() is not None]
        succ = 1 + sum(1 for a in answers if a.get("code") == SUCCESS)
        not_ready = sum(1 for a in answers if a.get("code") == TERM_NOT_READY)
        max_term = max((a.get("term", -1) for a in answers if a.get("code") == EXPIRED_TERM), default=-1)
        if st.is_quorum(succ):
            self.last_succ_heartbeat = _now_ms()
            return
        dledger_log.info("[%s] Parse heartbeat responses in cost=%d term=%d allNum=%d succNum=%d notReadyNum=%d "
                         "maxTerm=%d peerSize=%d", st.self_id, _now_ms() - self.last_send_heartbeat, term,
                         1 + len(answers), succ, not_ready, max_term, len(st.peers))
        if st.is_quorum(succ + not_ready):
            self.last_send_heartbeat = -1
        elif max_term > term:
            self.change_to_candidate(max_term)
        elif _now_ms() - self.last_succ_heartbeat > MAX_HEARTBEAT_LEAK * HEARTBEAT_INTERVAL_MS:
            self.change_to_candidate(term)

    def _maintain_as_follower(self) -> None:
        st = self.state
        elapsed = _now_ms() - self.last_leader_heartbeat
        if elapsed > 2 * HEARTBEAT_INTERVAL_MS:
            with st.lock:
                if st.role is Role.FOLLOWER and elapsed > MAX_HEARTBEAT_LEAK * HEARTBEAT_INTERVAL_MS:
                    dledger_log.info("[%s][HeartBeatTimeOut] lastLeaderHeartBeatTime: %s heartBeatTimeIntervalMs: %d "
                                     "lastLeader=%s", st.self_id, _timestamp(self.last_leader_heartbeat),
                                     HEARTBEAT_INTERVAL_MS, st.leader_id)
                    self.change_to_candidate(st.curr_term)

    def _next_vote_time(self) -> float:
        return _now_ms() + MIN_VOTE_INTERVAL_MS + random.randrange(MAX_VOTE_INTERVAL_MS - MIN_VOTE_INTERVAL_MS)

    def _maintain_as_candidate(self) -> None:
        st = self.state
        if _now_ms() < self.next_time_to_vote and not self.need_increase_term:
            return
        with st.lock:
            if st.role is not Role.CANDIDATE:
                return
            if self.last_parse_result == "WAIT_TO_VOTE_NEXT" or self.need_increase_term:
                prev = st.curr_term
                term = st.next_term()
                dledger_log.info("%s_[INCREASE_TERM] from %d to %d", st.self_id, prev, term)
                self.last_parse_result = "WAIT_TO_REVOTE"
            else:
                term = st.curr_term
            end_index, end_term = self.ledger.end_index, self.ledger.end_term
        if self.need_increase_term:
            self.next_time_to_vote = self._next_vote_time()
            self.need_increase_term = False
            return
        started = _now_ms()
        request = {"group": st.group, "leaderId": st.self_id, "term": term, "ledgerEndIndex": end_index,
                   "ledgerEndTerm": end_term}
        answers = [self.handle_vote(request, self_vote=True)]
        futures = [self.rpc.submit(addr, VOTE, request) for i, addr in st.peers.items() if i != st.self_id]
        deadline = time.monotonic() + (2000 + random.randrange(MAX_VOTE_INTERVAL_MS)) / 1000.0
        pending = set(futures)
        while pending and not self._quorum_reached(answers):
            done, pending = wait(pending, timeout=max(0.0, deadline - time.monotonic()), return_when=FIRST_COMPLETED)
            if not done:
                break
            answers += [f.result() for f in done if f.result() is not None]
        self._parse_votes(term, answers, len(futures) + 1 - len(pending), started)

    def _quorum_reached(self, answers: list[dict]) -> bool:
        results = [a["voteResult"] for a in answers]
        accepted = results.count(ACCEPT)
        return (REJECT_ALREADY_HAS_LEADER in results or self.state.is_quorum(accepted)
                or self.state.is_quorum(accepted + results.count(REJECT_TERM_NOT_READY)))

    def _parse_votes(self, term: int, answers: list[dict], all_num: int, started: float) -> None:
        st = self.state
        results = [a["voteResult"] for a in answers]
        accepted = results.count(ACCEPT)
        not_ready = results.count(REJECT_TERM_NOT_READY)
        bigger = results.count(REJECT_EXPIRED_LEDGER_TERM) + results.count(REJECT_SMALL_LEDGER_END_INDEX)
        has_leader = REJECT_ALREADY_HAS_LEADER in results
        max_term = max([term] + [a["term"] for a in answers if a["voteResult"] in (REJECT_EXPIRED_VOTE_TERM,
                                                                                   REJECT_TERM_SMALL_THAN_LEDGER)])
        valid = len(answers)
        if max_term > term:
            result = "WAIT_TO_VOTE_NEXT"
            self.next_time_to_vote = self._next_vote_time()
            self.change_to_candidate(max_term)
        elif has_leader:
            result = "WAIT_TO_REVOTE"
            self.next_time_to_vote = self._next_vote_time() + HEARTBEAT_INTERVAL_MS * MAX_HEARTBEAT_LEAK
        elif not st.is_quorum(valid):
            result = "WAIT_TO_REVOTE"
            self.next_time_to_vote = self._next_vote_time()
        elif not st.is_quorum(valid - bigger):
            result = "WAIT_TO_REVOTE"
            self.next_time_to_vote = self._next_vote_time() + MAX_VOTE_INTERVAL_MS
        elif st.is_quorum(accepted):
            result = "PASSED"
        elif st.is_quorum(accepted + not_ready):
            result = "REVOTE_IMMEDIATELY"
        else:
            result = "WAIT_TO_VOTE_NEXT"
            self.next_time_to_vote = self._next_vote_time()
        self.last_parse_result = result
        dledger_log.info("[%s] [PARSE_VOTE_RESULT] cost=%d term=%d memberNum=%d allNum=%d acceptedNum=%d "
                         "notReadyTermNum=%d biggerLedgerNum=%d alreadyHasLeader=%s maxTerm=%d result=%s", st.self_id,
                         _now_ms() - started, term, len(st.peers), all_num, accepted, not_ready, bigger,
                         "true" if has_leader else "false", max_term, result)
        if result == "PASSED":
            dledger_log.info("[%s] [VOTE_RESULT] has been elected to be the leader in term %d", st.self_id, term)
            self._change_to_leader(term)


def _timestamp(ms: float) -> str:
    if ms < 0:
        return "1970-01-01 07:59:59.999"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f".{int(ms) % 1000:03d}"
