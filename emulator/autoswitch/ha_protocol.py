"""The epoch HA protocol's wire shapes and states (rocketmq-all-5.3.0 `AutoSwitchHAConnection`/`AutoSwitchHAClient`),
shared by the master's connection and the slave's client, and the millisecond clock both and the service use."""
from __future__ import annotations

import struct
import time

READY, HANDSHAKE, TRANSFER, SUSPEND, SHUTDOWN = range(5)
STATE_NAMES = ("READY", "HANDSHAKE", "TRANSFER", "SUSPEND", "SHUTDOWN")
SLAVE_HANDSHAKE = struct.Struct(">ihhq")
SLAVE_TRANSFER = struct.Struct(">iq")
MASTER_HANDSHAKE = struct.Struct(">iiqi")
MASTER_TRANSFER = struct.Struct(">iiqiqq")
EPOCH_ENTRY = struct.Struct(">iq")


def now_ms() -> float:
    return time.time() * 1000
