"""Netty's `IdleStateHandler(0, 0, serverChannelMaxIdleTimeSeconds)` on the name server's connections: a connection
that has read and written nothing for that long (120 s by default) is closed, logged as 4.9.x's
`NettyConnectManageHandler` logs it (`NETTY SERVER PIPELINE: IDLE exception [addr]`, then `closeChannel: ...`), and
the close runs the server's close listeners: for a broker's connection, the route table's `onChannelDestroy` lines.
The real 4.9.1 name server cut off from its brokers dropped them this way exactly 120 s after their last
registration, before its 10 s scan found them expired (docs/fidelity.md, namesrv-partition on hosts)."""
from __future__ import annotations

import logging
import threading
import time

from emulator.server import RemotingServer

CHECK_S = 0.1
"""Netty fires the event at the idle time itself; checking every 100 ms keeps the 10 s expiry scan from coming first
(it would by chance up to CHECK_S / 10 s of the time)."""


class IdleChannels(threading.Thread):
    def __init__(self, server: RemotingServer, idle_s: float, log: logging.Logger) -> None:
        super().__init__(name="NettyServerIdleCheck", daemon=True)
        self.server, self.idle_s, self.log = server, idle_s, log
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(CHECK_S):
            now = time.monotonic()
            for channel in self.server.channels():
                if not channel.closed and now - channel.last_io >= self.idle_s:
                    self.log.warning("NETTY SERVER PIPELINE: IDLE exception [%s]", channel.remote)
                    self.log.info("closeChannel: close the connection to remote address[%s] result: true",
                                  channel.remote)
                    channel.close()
