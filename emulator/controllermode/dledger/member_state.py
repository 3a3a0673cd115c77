"""`MemberState`: this member's role (a member starts as CANDIDATE), current term, whom it voted for in that term
and the leader it follows, with the term and vote persisted in `<storeBaseDir>/dledger-<selfId>/currterm`
(`currTerm`, `voteLeader`) as DLedger does, so a restarted member never votes twice in a term."""
from __future__ import annotations

import os
import threading
from enum import Enum


class Role(Enum):
    CANDIDATE = "CANDIDATE"
    FOLLOWER = "FOLLOWER"
    LEADER = "LEADER"


class MemberState:
    def __init__(self, group: str, self_id: str, peers: dict[str, str], store_dir: str) -> None:
        self.group, self.self_id, self.peers = group, self_id, dict(peers)
        self.store_dir = store_dir
        self.lock = threading.RLock()
        self.role = Role.CANDIDATE
        self.curr_term = 0
        self.vote_for: str | None = None
        self.leader_id: str | None = None
        self.ledger_end_index = -1
        self.ledger_end_term = -1
        self._load()

    @property
    def self_addr(self) -> str:
        return self.peers[self.self_id]

    @property
    def leader_addr(self) -> str | None:
        return self.peers.get(self.leader_id) if self.leader_id else None

    def is_quorum(self, n: int) -> bool:
        return n >= len(self.peers) // 2 + 1

    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def next_term(self) -> int:
        with self.lock:
            self.curr_term += 1
            self.vote_for = None
            self._persist()
            return self.curr_term

    def change_to_leader(self, term: int) -> None:
        with self.lock:
            self.role, self.leader_id = Role.LEADER, self.self_id

    def change_to_follower(self, term: int, leader_id: str) -> None:
        self._change(Role.FOLLOWER, term, leader_id)

    def change_to_candidate(self, term: int) -> None:
        self._change(Role.CANDIDATE, term, None)

    def _change(self, role: Role, term: int, leader_id: str | None) -> None:
        """A later term forgets the vote of the earlier one."""
        with self.lock:
            if term > self.curr_term:
                self.curr_term, self.vote_for = term, None
            self.role, self.leader_id = role, leader_id
            self._persist()

    def set_vote_for(self, leader_id: str) -> None:
        with self.lock:
            self.vote_for = leader_id
            self._persist()

    # --- persistence --------------------------------------------------------------------------------------------
    def _path(self) -> str:
        return os.path.join(self.store_dir, "currterm")

    def _load(self) -> None:
        try:
            with open(self._path(), encoding="utf-8") as f:
                values = dict(line.strip().split("=", 1) for line in f if "=" in line)
        except OSError:
            return
        self.curr_term = int(values.get("currTerm", "0") or 0)
        self.vote_for = values.get("voteLeader") or None

    def _persist(self) -> None:
        os.makedirs(self.store_dir, exist_ok=True)
        tmp = self._path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"currTerm={self.curr_term}\nvoteLeader={self.vote_for or ''}\n")
        os.replace(tmp, self._path())
