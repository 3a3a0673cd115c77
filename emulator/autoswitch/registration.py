"""How a controller-mode broker gets its broker id (`ReplicasManager.register`, rocketmq-all-5.3.0, "persistent
unique broker id"): with no identity file it asks the leader for the set's next id, writes it with a check code
(`<brokerAddr>;<ms>`) to the temp file, applies for it (a refusal deletes the temp file and starts over), writes
the identity file and deletes the temp one; then it registers (CONTROLLER_REGISTER_BROKER), which tells it the
current master, if any, and the SyncStateSet. A restarted broker reads its identity file and only registers."""
from __future__ import annotations

import time

from emulator.autoswitch.broker_metadata import BrokerMetadata
from emulator.autoswitch.controller_client import ControllerClient
from emulator.logs import broker_log
from remoting.controller_bodies import SyncStateSet
from remoting.controller_headers import RegisterBrokerToControllerResponseHeader
from remoting.errors import RemotingError

INITIAL, CREATE_TEMP_METADATA_FILE_DONE, CREATE_METADATA_FILE_DONE, REGISTERED = (
    "INITIAL", "CREATE_TEMP_METADATA_FILE_DONE", "CREATE_METADATA_FILE_DONE", "REGISTERED")


class Registration:
    def __init__(self, client: ControllerClient, identity_path: str, cluster: str, name: str, address: str) -> None:
        self.client, self.cluster, self.name, self.address = client, cluster, name, address
        self.metadata = BrokerMetadata(identity_path)
        self.temp = BrokerMetadata(identity_path + "-temp", with_check_code=True)
        self.state = INITIAL
        self.broker_id: int | None = None

    def register(self, leader: str) -> tuple[RegisterBrokerToControllerResponseHeader, SyncStateSet] | None:
        """One attempt of every step still to do; the controller's answer to the final registration, or None."""
        self._confirm_state()
        broker_log.info("Confirm now register state: %s", self.state)
        if not self._valid():
            broker_log.error("Check and find that metadata/tempMetadata invalid, you can modify the broker config to "
                             "make them valid")
            return None
        try:
            if self.state == INITIAL:
                next_id = self.client.get_next_broker_id(leader, self.cluster, self.name)
                self.temp.update_and_persist(self.cluster, self.name, next_id, f"{self.address};{int(time.time() * 1000)}")
                self.state = CREATE_TEMP_METADATA_FILE_DONE
                broker_log.info("Register state change to CREATE_TEMP_METADATA_FILE_DONE, temp metadata: %s", self.temp)
            if self.state == CREATE_TEMP_METADATA_FILE_DONE:
                try:
                    self.client.apply_broker_id(leader, self.cluster, self.name, self.temp.broker_id,
                                                self.temp.register_check_code)
                except RemotingError as e:
                    broker_log.error("fail to apply broker id: %s %s", self.temp.broker_id, e)
                    self.temp.clear()
                    self.state = INITIAL
                    broker_log.info("Register state change to: %s", self.state)
                    return None
                self.metadata.update_and_persist(self.cluster, self.name, self.temp.broker_id)
                self.temp.clear()
                self.broker_id = self.metadata.broker_id
                self.state = CREATE_METADATA_FILE_DONE
                broker_log.info("Register state change to: %s, metadata: %s", self.state, self.metadata)
            answer = self.client.register_broker_to_controller(leader, self.cluster, self.name, self.broker_id,
                                                               self.address)
        except (RemotingError, OSError) as e:
            broker_log.error("Failed to register broker to controller %s", e)
            return None
        self.state = REGISTERED
        return answer

    def _confirm_state(self) -> None:
        self.metadata.read()
        if self.metadata.loaded:
            self.state = CREATE_METADATA_FILE_DONE if self.state != REGISTERED else self.state
            self.broker_id = self.metadata.broker_id
            return
        self.temp.read()
        if self.temp.loaded:
            self.state = CREATE_TEMP_METADATA_FILE_DONE

    def _valid(self) -> bool:
        for meta, what in ((self.temp, "temp metadata"), (self.metadata, "metadata")):
            if not meta.loaded:
                continue
            if meta.cluster != self.cluster:
                broker_log.error("The clusterName: %s in broker %s is different from the clusterName: %s in broker "
                                 "config", meta.cluster, what, self.cluster)
                return False
            if meta.broker_name != self.name:
                broker_log.error("The brokerName: %s in broker %s is different from the brokerName: %s in broker "
                                 "config", meta.broker_name, what, self.name)
                return False
        return True
