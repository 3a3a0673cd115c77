"""`ReplicasManager` (rocketmq-all-5.3.0): a controller-mode broker's dealings with the controllers. Start-up:
find the leader (CONTROLLER_GET_METADATA_INFO of a reachable controller), register (`registration`), heartbeat,
and if the set has no master ask to become it; until then the broker is fenced (no puts, no name-server
registration). Then: heartbeat every controller every `brokerHeartbeatInterval`, refresh the leader every
`syncControllerMetadataPeriod`, poll the replica info every `syncBrokerMetadataPeriod` (a new master epoch means a
role change; no master means: ask to be elected), and as master check the SyncStateSet every
`checkSyncStateSetPeriod` and report changes (CONTROLLER_ALTER_SYNC_STATE_SET). The controller's
NOTIFY_BROKER_ROLE_CHANGED arrives through `change_broker_role`. A role change moves the HA service, the broker id
(0 for a master, the controller's id for a slave) and the role, and re-registers with the name servers."""
from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from emulator.autoswitch.controller_client import ControllerClient
from emulator.autoswitch.periodic import Periodic
from emulator.autoswitch.registration import Registration
from emulator.controllermode.javatext import java_set
from emulator.logs import broker_log, store_log
from remoting.codes import ResponseCode
from remoting.controller_headers import BrokerHeartbeatRequestHeader
from remoting.errors import MQBrokerException, RemotingError

RETRY_INTERVAL_S = 5.0
INITIAL, FIRST_SYNC_DONE, REGISTER_DONE, RUNNING, SHUTDOWN = (
    "INITIAL", "FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE", "REGISTER_TO_CONTROLLER_DONE", "RUNNING", "SHUTDOWN")


class ReplicasManager:
    def __init__(self, broker) -> None:
        self.broker, self.config, self.store = broker, broker.config, broker.store
        self.ha = broker.store.ha
        self.client = ControllerClient()
        self.address = broker.broker_addr
        self.name, self.cluster = self.config.get("brokerName") or "", self.config.get("brokerClusterName") or ""
        self.registration = Registration(self.client, self.config.broker_identity_file(), self.cluster, self.name,
                                         self.address)
        self.controller_addresses = [a for a in (self.config.get("controllerAddr") or "").split(";") if a]
        self.available: dict[str, bool] = {}
        self.leader = ""
        self.state = INITIAL
        self.broker_controller_id: int | None = None
        self.master_broker_id: int | None = None
        self.master_address = ""
        self.master_epoch = 0
        self.sync_state_set: set[int] = set()
        self.sync_state_set_epoch = 0
        self.lock = threading.RLock()
        self.executor = ThreadPoolExecutor(max_workers=3, thread_name_prefix="ReplicasManager_ExecutorService")
        self.timers: list[Periodic] = []
        self.check_timer: Periodic | None = None
        self.slave_sync_timer: Periodic | None = None
        self.last_sync_ms = time.time() * 1000
        self.set_fenced(True)

    def _ms(self, key: str) -> float:
        return self.config.get_int(key) / 1000.0

    # --- start --------------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.state = INITIAL
        self.timers.append(Periodic("ReplicasManager_ScheduledService_1", 3.0, lambda: 3.0, self.scan_available))
        self.timers.append(Periodic("BrokerControllerScheduledThread_heartbeat", 1.0,
                                    lambda: self._ms("brokerHeartbeatInterval"), self._scheduled_heartbeat))
        threading.Thread(target=self.scan_available, name="ReplicasManager_scan_thread_1", daemon=True).start()
        if not self._start_basic():
            broker_log.error("Failed to start replicasManager")
            threading.Thread(target=self._retry_start, name="ReplicasManager_ExecutorService_1", daemon=True).start()

    def _retry_start(self) -> None:
        tries = 0
        while self.state != SHUTDOWN:
            time.sleep(RETRY_INTERVAL_S)
            tries += 1
            broker_log.warning("Failed to start replicasManager, retry times:%d, current state:%s, try it again", tries,
                               self.state)
            if self._start_basic():
                broker_log.info("Start replicasManager success, retry times:%d", tries)
                return

    def _start_basic(self) -> bool:
        if self.state == SHUTDOWN:
            return False
        if self.state == INITIAL:
            if not self._first_controller_metadata():
                return False
            self.state = FIRST_SYNC_DONE
            broker_log.info("First time sync controller metadata success, change state to: %s", self.state)
        if self.state == FIRST_SYNC_DONE:
            for _ in range(5):
                if self._register():
                    self.state = REGISTER_DONE
                    broker_log.info("First time register broker success, change state to: %s", self.state)
                    break
                time.sleep(random.random())
            else:
                broker_log.error("Register to broker failed 5 times")
                return False
        if self.state == REGISTER_DONE:
            self.send_heartbeat_to_controller()
            if self.master_broker_id is None and not self.broker_elect():
                return False
            broker_log.info("Master in this broker set is elected, masterBrokerId: %s, masterBrokerAddr: %s",
                            self.master_broker_id, self.master_address)
            self.state = RUNNING
            self.set_fenced(False)
            broker_log.info("All register process has been done, change state to: %s", self.state)
        self.timers.append(Periodic("ReplicasManager_ScheduledService_2", 3.0,
                                    lambda: self._ms("syncBrokerMetadataPeriod"), self.sync_broker_metadata))
        self.ha.listeners.append(self.report_sync_state_set)
        return True

    def shutdown(self) -> None:
        self.state = SHUTDOWN
        for timer in [*self.timers, self.check_timer, self.slave_sync_timer]:
            if timer is not None:
                timer.cancel()
        self.executor.shutdown(wait=False)
        self.client.close()

    def set_fenced(self, fenced: bool) -> None:
        self.broker.isolated = fenced
        self.store.fenced = fenced

    # --- controllers ----------------------------------------------------------------------------------------------
    def scan_available(self) -> None:
        for addr in self.controller_addresses:
            if self.client.reachable(addr):
                self.available.setdefault(addr, True)
            elif self.available.pop(addr, None) is not None:
                broker_log.warning("scanAvailableControllerAddresses remove unconnected address %s", addr)

    def _first_controller_metadata(self) -> bool:
        for _ in range(3):
            if self.update_controller_metadata():
                self.timers.append(Periodic("ReplicasManager_ScheduledService_3", 3.0,
                                            lambda: self._ms("syncControllerMetadataPeriod"),
                                            self.update_controller_metadata))
                return True
            time.sleep(1.0)
        broker_log.error("Failed to init controller metadata, maybe the controllers in %s is not available",
                         self.controller_addresses)
        return False

    def update_controller_metadata(self) -> bool:
        for addr in list(self.available):
            try:
                leader = self.client.get_controller_metadata(addr).leader_address
            except RemotingError as e:
                broker_log.error("Failed to update controller metadata %s", e)
                continue
            if leader:
                self.leader = leader
                broker_log.info("Update controller leader address to %s", leader)
                return True
        return False

    def _scheduled_heartbeat(self) -> None:
        if not self.broker.isolated:
            self.send_heartbeat_to_controller()

    def send_heartbeat_to_controller(self) -> None:
        config = self.config
        header = BrokerHeartbeatRequestHeader(
            self.cluster, self.address, self.name, self.broker_controller_id, self.ha.epoch_cache.last_epoch(),
            self.store.max_phy_offset(), self.store.get_confirm_offset(),
            config.get_int("controllerHeartBeatTimeoutMills"), config.get_int("brokerElectionPriority"))
        for addr in list(self.available):
            self.client.send_heartbeat(addr, header, config.get_int("sendHeartbeatTimeoutMillis"))

    def _register(self) -> bool:
        answer = self.registration.register(self.leader)
        if answer is None:
            return False
        self.broker_controller_id = self.registration.broker_id
        self.ha.local_broker_id = self.broker_controller_id
        header, sync = answer
        if header.masterBrokerId is not None:
            if header.masterBrokerId == self.broker_controller_id:
                self.change_to_master(int(header.masterEpoch or 0), int(header.syncStateSetEpoch or 0),
                                      sync.sync_state_set)
            else:
                self.change_to_slave(header.masterAddress or "", int(header.masterEpoch or 0), header.masterBrokerId)
        broker_log.info("Register state change to: REGISTERED, masterBrokerId: %s, masterBrokerAddr: %s",
                        self.master_broker_id, self.master_address)
        return True

    def broker_elect(self) -> bool:
        try:
            header, sync = self.client.broker_elect(self.leader, self.cluster, self.name, self.broker_controller_id)
        except RemotingError as e:
            broker_log.error("Failed to try elect %s", e)
            return False
        if not header.masterAddress or header.masterBrokerId is None:
            broker_log.warning("Now no master in broker set")
            return False
        if header.masterBrokerId == self.broker_controller_id:
            self.change_to_master(int(header.masterEpoch or 0), int(header.syncStateSetEpoch or 0), sync)
        else:
            self.change_to_slave(header.masterAddress, int(header.masterEpoch or 0), header.masterBrokerId)
        return True

    def sync_broker_metadata(self) -> None:
        try:
            info = self.client.get_replica_info(self.leader, self.name)
        except MQBrokerException as e:
            broker_log.warning("Error happen when get broker %s's metadata %s", self.name, e)
            if e.response_code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST:
                self._register()
                time.sleep(2)
            return
        except RemotingError as e:
            broker_log.warning("Error happen when get broker %s's metadata %s", self.name, e)
            return
        with self.lock:
            if info.master_epoch > self.master_epoch:
                if info.master_address and info.master_broker_id is not None:
                    if info.master_broker_id == self.broker_controller_id:
                        self.change_to_master(info.master_epoch, info.sync_state_set.sync_state_set_epoch,
                                              info.sync_state_set.sync_state_set)
                    else:
                        self.change_to_slave(info.master_address, info.master_epoch, info.master_broker_id)
                else:
                    self.broker_elect()
            elif info.master_epoch == self.master_epoch and self.is_master:
                self.change_sync_state_set(info.sync_state_set.sync_state_set,
                                           info.sync_state_set.sync_state_set_epoch)

    @property
    def is_master(self) -> bool:
        return self.config.role == "SYNC_MASTER"

    # --- role changes -------------------------------------------------------------------------------------------
    def change_broker_role(self, master_id: int | None, master_addr: str | None, master_epoch: int | None,
                           sync_epoch: int | None, sync: set[int]) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED from the controller leader."""
        with self.lock:
            if master_id is not None and (master_epoch or 0) > self.master_epoch:
                if master_id == self.broker_controller_id:
                    self.change_to_master(int(master_epoch or 0), int(sync_epoch or 0), sync)
                else:
                    self.change_to_slave(master_addr or "", int(master_epoch or 0), master_id)

    def change_to_master(self, epoch: int, sync_epoch: int, sync: set[int]) -> None:
        with self.lock:
            if epoch <= self.master_epoch:
                return
            broker_log.info("Begin to change to master, brokerName:%s, replicas:%s, new Epoch:%d", self.name,
                            self.address, epoch)
            self.master_epoch = epoch
            if self.master_broker_id == self.broker_controller_id and self.config.get("brokerId") == "0":
                self.change_sync_state_set(set(sync), sync_epoch)
                self.ha.change_to_master_when_last_role_is_master(epoch)
                self.broker.topics.data_version.next_version(epoch)
                self.executor.submit(self.check_sync_state_set)
                self.register_when_role_change()
                return
            self.change_sync_state_set(set(sync), sync_epoch)
            self._slave_synchronize(master=True)
            self.ha.change_to_master(epoch)
            self.config.set_runtime("brokerId", "0")
            self.config.set_runtime("brokerRole", "SYNC_MASTER")
            self.broker.change_special_service(True)
            self.master_address, self.master_broker_id = self.address, self.broker_controller_id
            if self.check_timer is not None:
                self.check_timer.cancel()
            self.check_timer = Periodic("ReplicasManager_ScheduledService_4", 3.0,
                                        lambda: self._ms("checkSyncStateSetPeriod"), self.check_sync_state_set)
            self.broker.topics.data_version.next_version(epoch)
            self.executor.submit(self.check_sync_state_set)
            self.register_when_role_change()

    def change_to_slave(self, master_addr: str, epoch: int, master_id: int) -> None:
        with self.lock:
            if epoch <= self.master_epoch:
                return
            broker_log.info("Begin to change to slave, brokerName=%s, brokerId=%s, newMasterBrokerId=%s, "
                            "newMasterAddress=%s, newMasterEpoch=%d", self.name, self.broker_controller_id, master_id,
                            master_addr, epoch)
            self.master_epoch = epoch
            if master_id == self.master_broker_id:
                store_log.info("Change ha to slave success, master doesn't change, newMasterAddress:%s, "
                               "newMasterEpoch:%d", master_addr, epoch)
                self.broker.topics.data_version.next_version(epoch)
                self.register_when_role_change()
                return
            if self.check_timer is not None:
                self.check_timer.cancel()
            self.config.set_runtime("brokerRole", "SLAVE")
            self.broker.change_special_service(False)
            self.config.set_runtime("brokerId", str(self.broker_controller_id))
            self.master_address, self.master_broker_id = master_addr, master_id
            self._slave_synchronize(master=False)
            self.ha.change_to_slave(master_addr, epoch, self.broker_controller_id)
            self.broker.topics.data_version.next_version(epoch)
            self.register_when_role_change()

    def register_when_role_change(self) -> None:
        def register() -> None:
            try:
                self.broker.register_all()
            except Exception as e:  # logged as Java does, the role change stays
                broker_log.error("Error happen when register broker to name-srv, Failed to change broker to %s %s",
                                 self.config.role, e)
                return
            broker_log.info("Change broker [id:%s][address:%s] to %s, newMasterBrokerId:%s, newMasterAddress:%s, "
                            "newMasterEpoch:%d, syncStateSetEpoch:%d", self.broker_controller_id, self.address,
                            self.config.role, self.master_broker_id, self.master_address, self.master_epoch,
                            self.sync_state_set_epoch)

        self.executor.submit(register)

    def change_sync_state_set(self, members: set[int], epoch: int) -> None:
        with self.lock:
            if epoch > self.sync_state_set_epoch:
                broker_log.info("SyncStateSet changed from %s to %s", java_set(self.sync_state_set), java_set(members))
                self.sync_state_set_epoch = epoch
                self.sync_state_set = set(members)
                self.ha.set_sync_state_set(set(members))

    def _slave_synchronize(self, master: bool) -> None:
        if self.slave_sync_timer is not None:
            self.slave_sync_timer.cancel()
            self.slave_sync_timer = None
        old, new = self.broker.master_addr, (None if master else self.master_address)
        if old != new:
            broker_log.info("Update master address from %s to %s", old or "null", new or "null")
        self.broker.master_addr = new
        if master:
            return

        def sync() -> None:
            if time.time() * 1000 - self.last_sync_ms > 10_000 and self.broker.master_addr:
                self.broker.slave_synchronize(self.broker.master_addr)
                self.last_sync_ms = time.time() * 1000

        self.slave_sync_timer = Periodic("BrokerControllerScheduledThread_slaveSync", 3.0, lambda: 3.0, sync)

    # --- SyncStateSet -------------------------------------------------------------------------------------------
    def check_sync_state_set(self) -> None:
        members = self.ha.maybe_shrink()
        members.add(self.broker_controller_id)
        with self.lock:
            if members == self.sync_state_set:
                return
        self.report_sync_state_set(members)

    def report_sync_state_set(self, members: set[int]) -> None:
        try:
            result = self.client.alter_sync_state_set(self.leader, self.name, self.broker_controller_id,
                                                      self.master_epoch, members, self.sync_state_set_epoch)
        except RemotingError as e:
            broker_log.error("Error happen when change SyncStateSet, broker:%s, masterAddress:%s, masterEpoch:%d, "
                             "oldSyncStateSet:%s, newSyncStateSet:%s, syncStateSetEpoch:%d %s", self.name,
                             self.master_address, self.master_epoch, java_set(self.sync_state_set), java_set(members),
                             self.sync_state_set_epoch, e)
            return
        self.change_sync_state_set(result.sync_state_set, result.sync_state_set_epoch)
