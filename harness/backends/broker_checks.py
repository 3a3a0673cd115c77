"""The broker checks every backend's node shares, whatever runs it (a process here, a container, a process on
another host): registered = it answers GET_BROKER_RUNTIME_INFO and the name server lists it; caught up = its
commitLogMaxOffset has reached the master's. A node class mixes `BrokerChecks` in beside its own `wait_ready`
(process up, port open) and gets `wait_registered`, `caught_up` and `wait_caught_up`.

`poll_until(check, deadline, what, error)` is the one wait loop of the nodes: `check()` until it is true, the last
exception it raised named in the error at the deadline."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

POLL_S = 0.1


def poll_until(check: Callable[[], Any], deadline: float, what: str, error: type[Exception]) -> None:
    """Call `check` every `POLL_S` until it returns something true; raise `error(what (last error: ...))` once
    `deadline` (time.monotonic) has passed."""
    last: Exception | None = None
    while True:
        try:
            if check():
                return
        except Exception as err:  # noqa: BLE001 - not ready yet; the last reason goes into the message
            last = err
        if time.monotonic() >= deadline:
            raise error(what + (f" (last error: {last})" if last else ""))
        time.sleep(POLL_S)


class BrokerChecks:
    """Mixed into a node dataclass that has `name`, `role`, `addr`, `namesrv_addr`, `master_addr`, `broker_id`,
    `wait_ready(timeout_s)` and a `NOT_READY` exception class."""

    NOT_READY: type[Exception] = RuntimeError
    name: str
    role: str
    addr: str
    namesrv_addr: str | None
    master_addr: str | None
    broker_id: int | None

    def registered(self) -> bool:
        """The broker answers GET_BROKER_RUNTIME_INFO and the name server lists it (a name server: True)."""
        if self.role in ("namesrv", "controller"):
            return True
        from harness import brokerclient

        if brokerclient.runtime_info(self.addr) is None:
            return False
        return brokerclient.registered(self.namesrv_addr or "", self.addr, self.broker_id)

    def wait_registered(self, deadline: float) -> None:
        if self.role not in ("namesrv", "controller"):
            poll_until(self.registered, deadline,
                       f"{self.name} ({self.addr}) did not register with the name server",
                       self.NOT_READY)

    def caught_up(self) -> bool:
        """This broker's commitLogMaxOffset has reached the master's."""
        from harness import brokerclient

        master = brokerclient.runtime_info(self.master_addr or "")
        mine = brokerclient.runtime_info(self.addr)
        if not master or not mine:
            return False
        return int(mine.get("commitLogMaxOffset", -1)) >= int(master.get("commitLogMaxOffset", 0))

    def wait_caught_up(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        self.wait_ready(timeout_s)  # type: ignore[attr-defined]  # the node's own (process or container up)
        if self.role == "slave":
            poll_until(self.caught_up, deadline,
                       f"{self.name}: the slave did not catch up with the master",
                       self.NOT_READY)
