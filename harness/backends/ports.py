"""Free TCP ports on 127.0.0.1 for a node. A broker needs three: `listenPort`, `listenPort - 2` (Apache's VIP
channel, `fastListenPort`) and `haListenPort` (we use `listenPort + 1`, Apache's default), so a base is taken only
when all three bind. Ports are drawn at random from a range that avoids the kernel's ephemeral range."""
from __future__ import annotations

import random
import socket
from collections import deque

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
    """Hands out ports that are free now and not handed out before by this picker (of its last `remember` ports,
    when given: a long-lived picker forgets the oldest, whose nodes have bound them or ended), from `low`-`high`."""

    def __init__(self, seed: int | None = None, host: str = HOST, *, low: int = LOW, high: int = HIGH,
                 remember: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._taken: deque[int] = deque(maxlen=remember)
        self.host, self.low, self.high = host, low, high

    def block(self, offsets: tuple[int, ...]) -> int:
        """A base port `p` such that every `p + offset` is free; all of them are then taken."""
        lo, hi = self.low - min(0, *offsets), self.high - max(0, *offsets)
        for _ in range(ATTEMPTS if lo < hi else 0):
            p = self._rng.randrange(lo, hi)
            ports = [p + o for o in offsets]
            if any(x in self._taken for x in ports) or not all(is_free(x, self.host) for x in ports):
                continue
            self._taken.extend(ports)
            return p
        raise OSError(f"no free ports {offsets} around {self.low}-{self.high} on {self.host} after {ATTEMPTS} tries")

    def one(self) -> int:
        return self.block((0,))

    def broker(self) -> tuple[int, int]:
        """(listenPort, haListenPort) with listenPort - 2 free as well."""
        p = self.block((-2, 0, 1))
        return p, p + 1
