"""Free TCP ports on 127.0.0.1 for a node. A broker needs three: `listenPort`, `listenPort - 2` (Apache's VIP
channel, `fastListenPort`) and `haListenPort` (we use `listenPort + 1`, Apache's default), so a base is taken only
when all three bind. Ports are drawn at random from a range that avoids the kernel's ephemeral range."""
from __future__ import annotations

import random
import socket

LOW, HIGH = 20000, 30000
ATTEMPTS = 500
HOST = "127.0.0.1"


def is_free(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class PortPicker:
    """Hands out ports that are free now and not handed out before by this picker."""

    def __init__(self, seed: int | None = None, host: str = HOST) -> None:
        self._rng = random.Random(seed)
        self._taken: set[int] = set()
        self.host = host

    def block(self, offsets: tuple[int, ...]) -> int:
        """A base port `p` such that every `p + offset` is free; all of them are then taken."""
        for _ in range(ATTEMPTS):
            p = self._rng.randrange(LOW + 2, HIGH - 2)
            ports = [p + o for o in offsets]
            if any(x in self._taken for x in ports) or not all(is_free(x, self.host) for x in ports):
                continue
            self._taken.update(ports)
            return p
        raise OSError(f"no free ports {offsets} around {LOW}-{HIGH} on {self.host} after {ATTEMPTS} tries")

    def one(self) -> int:
        return self.block((0,))

    def broker(self) -> tuple[int, int]:
        """(listenPort, haListenPort) with listenPort - 2 free as well."""
        p = self.block((-2, 0, 1))
        return p, p + 1
