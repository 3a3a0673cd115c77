"""The broker's controller-assigned identity (`BrokerMetadata` / `TempBrokerMetadata`, rocketmq-all-5.3.0):
`storePathBrokerIdentity` (default `<storePathRootDir>/brokerIdentity`) holds `cluster#brokerName#brokerId` once the
controller accepted the id; `<that>-temp` holds `cluster#brokerName#brokerId#registerCheckCode` while the id is
being applied for, so a broker that dies half-way resumes where it stopped."""
from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(eq=False, repr=False)  # compared and hashed by identity; `__str__` is Java's toString
class BrokerMetadata:
    path: str
    with_check_code: bool = False
    cluster: str | None = field(default=None, init=False)
    broker_name: str | None = field(default=None, init=False)
    broker_id: int | None = field(default=None, init=False)
    register_check_code: str | None = field(default=None, init=False)

    @property
    def loaded(self) -> bool:
        base = bool(self.cluster) and bool(self.broker_name) and self.broker_id is not None
        return base and (not self.with_check_code or bool(self.register_check_code))

    def read(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                parts = f.read().strip().split("#")
        except OSError:
            return
        try:
            self.cluster, self.broker_name, self.broker_id = parts[0], parts[1], int(parts[2])
            if self.with_check_code:
                self.register_check_code = parts[3]
        except (IndexError, ValueError):
            self.clear_in_memory()

    def update_and_persist(self, cluster: str, broker_name: str, broker_id: int,
                           check_code: str | None = None) -> None:
        self.cluster, self.broker_name, self.broker_id = cluster, broker_name, broker_id
        self.register_check_code = check_code
        text = f"{cluster}#{broker_name}#{broker_id}" + (f"#{check_code}" if self.with_check_code else "")
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        if os.path.exists(self.path):
            os.remove(self.path)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, self.path)

    def clear_in_memory(self) -> None:
        self.cluster = self.broker_name = self.register_check_code = None
        self.broker_id = None

    def clear(self) -> None:
        self.clear_in_memory()
        try:
            os.remove(self.path)
        except OSError:
            pass

    def __str__(self) -> str:
        name = "TempBrokerMetadata" if self.with_check_code else "BrokerMetadata"
        code = f"registerCheckCode='{self.register_check_code}', " if self.with_check_code else ""
        return (f"{name}{{{code}clusterName='{self.cluster}', brokerName='{self.broker_name}', "
                f"brokerId={self.broker_id}, filePath='{self.path}'}}")
