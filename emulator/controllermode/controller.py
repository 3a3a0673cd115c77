"""`DLedgerController` (rocketmq-all-5.3.0): the controller on top of its DLedger member. Requests become events of
a single `EventScheduler` thread: the decision is made on the current state, its events are appended to the
DLedger log and the answer is given only when they are committed (and applied); a controller that is not in leader
state answers every such request CONTROLLER_NOT_LEADER "The controller is not in leader state" at once. On becoming
leader it first commits an empty proposal (so every entry of earlier terms is applied) and only then schedules
events and scans for inactive masters every `scanInactiveMasterInterval`."""
from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future

from emulator.controllermode.config import ControllerConfig
from emulator.controllermode.decisions import ControllerResult, Decisions
from emulator.controllermode.dledger.member_state import Role
from emulator.controllermode.dledger.server import DLedgerServer
from emulator.controllermode.elect_policy import ElectPolicy
from emulator.controllermode.heartbeats import BrokerHeartbeatManager
from emulator.controllermode.replicas import ReplicasState
from emulator.logs import controller_log
from remoting.codes import ResponseCode

APPEND_WAIT_S = 5.0
QUEUE_CAPACITY = 1024


class DLedgerController:
    def __init__(self, config: ControllerConfig, heartbeats: BrokerHeartbeatManager, version: int) -> None:
        self.config = config
        self.state = ReplicasState()
        policy = ElectPolicy(heartbeats.is_active, heartbeats.live_info)
        self.decisions = Decisions(self.state, heartbeats.is_active, policy, lambda: config.unclean_election)
        peers = {p.id: p.addr for p in config.peers}
        self.dledger = DLedgerServer(config.group, config.self_id, peers, config.store_path, version, self._apply)
        self.dledger.role_handlers.append(self._on_role_change)
        self.current_role = Role.FOLLOWER
        self._events: queue.Queue = queue.Queue(QUEUE_CAPACITY)
        self._role_jobs: queue.Queue = queue.Queue()
        self._scheduling = False
        self._stop = threading.Event()
        self._scan_generation = 0
        self.inactive_master_listeners: list[Callable[[str], None]] = []

    def start(self) -> None:
        threading.Thread(target=self._event_loop, name="EventScheduler", daemon=True).start()
        threading.Thread(target=self._role_loop, name="DLedgerControllerRoleChangeHandler_1", daemon=True).start()
        self.dledger.start()

    def shutdown(self) -> None:
        self._stop.set()
        self._scan_generation += 1
        self.dledger.shutdown()

    def is_leader_state(self) -> bool:
        return self.current_role is Role.LEADER and self._scheduling

    # --- events -----------------------------------------------------------------------------------------------
    def append_event(self, name: str, decide: Callable[[], ControllerResult], is_write: bool) -> Future:
        """A future of the ControllerResult (NOT_LEADER at once when not in leader state)."""
        future: Future = Future()
        if self._stop.is_set() or not self.is_leader_state():
            future.set_result(ControllerResult().fail(ResponseCode.CONTROLLER_NOT_LEADER,
                                                      "The controller is not in leader state"))
            return future
        self._events.put((name, decide, is_write, future))
        return future

    def _event_loop(self) -> None:
        controller_log.info("Start event scheduler.")
        while not self._stop.is_set():
            try:
                name, decide, is_write, future = self._events.get(timeout=5.0)
            except queue.Empty:
                continue
            try:
                with self.state.lock:
                    result = decide()
                controller_log.info("Event queue run event %s, get the result %s", name, result.describe())
                if is_write and result.events:
                    body = json.dumps(result.events).encode()
                    if not self.dledger.append_and_wait(body, APPEND_WAIT_S):
                        controller_log.error("Failed to append event to DLedger, the response is %s, try cancel the "
                                             "future", result.describe())
                        future.cancel()
                        continue
                future.set_result(result)
            except Exception as e:  # the Java handler completes the future exceptionally
                controller_log.error("Error happen when handle event %s %s", name, e)
                future.set_exception(e)

    def _apply(self, body: bytes) -> None:
        for event in json.loads(body):
            self.state.apply(event)

    # --- roles ------------------------------------------------------------------------------------------------
    def _on_role_change(self, term: int, role: Role) -> None:
        self._role_jobs.put((term, role))

    def _role_loop(self) -> None:
        while not self._stop.is_set():
            try:
                term, role = self._role_jobs.get(timeout=1.0)
            except queue.Empty:
                continue
            if role is Role.CANDIDATE:
                self.current_role = Role.CANDIDATE
                controller_log.info("Controller %s change role to candidate", self.config.self_id)
                self._stop_scheduling()
            elif role is Role.FOLLOWER:
                self.current_role = Role.FOLLOWER
                controller_log.info("Controller %s change role to Follower, leaderId:%s", self.config.self_id,
                                    self.dledger.state.leader_id)
                self._stop_scheduling()
            else:
                self._become_leader()

    def _become_leader(self) -> None:
        controller_log.info("Controller %s change role to leader, try process a initial proposal", self.config.self_id)
        tries = 0
        while not self._stop.is_set():
            if self.dledger.append_and_wait(b"", APPEND_WAIT_S):
                self.current_role = Role.LEADER
                if not self._scheduling:
                    self._scheduling = True
                    controller_log.info("Start scheduling controller events")
                self._start_scan()
                return
            if not self.dledger.is_leader():
                controller_log.error("Append a initial log failed because current state is not leader")
                return
            tries += 1
            controller_log.error("Controller leader append initial log failed, try %d times", tries)
            if tries % 3 == 0:
                controller_log.warning("Controller leader append initial log failed too many times, please wait a "
                                       "while")

    def _stop_scheduling(self) -> None:
        self._scan_generation += 1
        if self._scheduling:
            self._scheduling = False
            controller_log.info("Stop scheduling controller events")

    def _start_scan(self) -> None:
        self._scan_generation += 1
        generation = self._scan_generation
        interval_s = self.config.get_int("scanInactiveMasterInterval") / 1000.0

        def scan() -> None:
            while not self._stop.wait(interval_s) and generation == self._scan_generation:
                if not self.is_leader_state():
                    return
                with self.state.lock:
                    names = self.decisions.scan_need_reelect()
                for name in names:
                    for listener in self.inactive_master_listeners:
                        listener(name)

        threading.Thread(target=scan, name="DLedgerController_scanInactiveService_1", daemon=True).start()

    # --- metadata ---------------------------------------------------------------------------------------------
    def metadata(self) -> dict[str, object]:
        st = self.dledger.state
        peers = "".join(f"{pid}:{addr};" for pid, addr in st.peers.items())
        return {"group": st.group, "controllerLeaderId": st.leader_id, "controllerLeaderAddress": st.leader_addr,
                "isLeader": st.is_leader(), "peers": peers}
