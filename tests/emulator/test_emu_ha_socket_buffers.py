"""The HA link's socket buffers per version (`VersionProfile.ha_socket_buffer`): 4.9.0-4.9.2 set both to 64 KiB
(the slave's before it connects), 4.9.3 and 5.x leave the kernel's autotuned ones, which is how much a stalled
slave's link takes before the master's writes block (docs/fidelity.md, syncstateset-expansion-race)."""
from __future__ import annotations

import socket

import pytest

from emulator.ha.connection import connect, set_buffers
from emulator.version import profile_for


def _buffers(sock: socket.socket) -> tuple[int, int]:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF), sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)


@pytest.mark.parametrize(("release", "fixed"), [("4.9.1", True), ("4.9.2", True), ("4.9.3", False), ("5.3.0", False)])
def test_both_ends_of_the_ha_link_take_the_versions_buffers(release: str, fixed: bool) -> None:
    size = profile_for(release).ha_socket_buffer
    with socket.create_server(("127.0.0.1", 0)) as server:
        slave = connect("127.0.0.1", server.getsockname()[1], size, 3)
        master, _ = server.accept()
        try:
            set_buffers(master, size)
            if fixed:  # Linux doubles what is asked for its own bookkeeping
                assert _buffers(slave) == _buffers(master) == (2 * 64 * 1024, 2 * 64 * 1024)
            else:
                # the kernel's: its send buffer sized by TCP's autotuning at the connect, not locked at 128 KiB
                assert size is None and _buffers(slave)[1] != 2 * 64 * 1024 and _buffers(master)[1] != 2 * 64 * 1024
        finally:
            slave.close()
            master.close()
