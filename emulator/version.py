"""Version profiles: the RocketMQ behaviour that changed between releases, selected by `ROCKETMQ_VERSION` (as the
official image sets it) or `--rocketmq-version`. `4.9.1` covers 4.9.0-4.9.2, `4.9.3` covers 4.9.3-4.9.8, `5.x` covers
5.0-5.3 (the minor version picks the `[PC_SYNCHRONIZED]` code). Sources: ROCKETMQ-FACTS B.2 and the release tags."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from remoting.codes import ResponseCode

VERSION_ENV = "ROCKETMQ_VERSION"
DEFAULT_VERSION = "4.9.1"
ALLOWED = "4.9.0-4.9.8, 5.0.0-5.3.x (or the profile names 4.9.1, 4.9.3, 5.x)"


class VersionError(ValueError):
    """A version string no profile covers."""


@dataclass(frozen=True)
class VersionProfile:
    name: str
    """Profile name: `4.9.1`, `4.9.3` or `5.x`."""
    release: str
    """The release asked for, e.g. `4.9.1` or `5.3.0`."""
    wire_version: int
    """`MQVersion.CURRENT_VERSION` ordinal the broker puts in every header (`brokerVersion` in runtime info)."""
    version_desc: str
    """`V4_9_1`-style name (`brokerVersionDesc`)."""

    @property
    def is_4_9_1(self) -> bool:
        return self.name == "4.9.1"

    @property
    def is_5x(self) -> bool:
        return self.name == "5.x"

    @property
    def deadline_at_creation(self) -> bool:
        """4.9.3+: a group-transfer request's deadline is fixed when it is created (`GroupCommitRequest.deadLine`);
        4.9.1: `now + syncFlushTimeout` when the service reaches it."""
        return not self.is_4_9_1

    @property
    def replica_timeout_key(self) -> str:
        return "syncFlushTimeout" if self.is_4_9_1 else "slaveTimeout"

    @property
    def checks_slave_ok(self) -> bool:
        """4.x asks `HAService.isSlaveOK` on the send path; 5.x never does."""
        return not self.is_5x

    @property
    def logs_transfer_timeout(self) -> str | None:
        """The store.log line for a group-transfer timeout (4.9.3-4.9.8 log none)."""
        if self.is_4_9_1:
            return "transfer messsage to slave timeout, {offset}"
        if self.is_5x:
            return "transfer message to slave timeout, offset : {offset}, request acks: {acks}"
        return None

    @property
    def slave_append_through_mapping(self) -> bool:
        """4.9.3+ write replicated bytes through the mapping (PR #3657); 4.9.1 uses `FileChannel.write`."""
        return not self.is_4_9_1

    @property
    def flush_disk_watcher(self) -> bool:
        """4.9.3+ time out a SYNC_FLUSH request at its deadline (`FlushDiskWatcher`); 4.9.1 waits for the flush."""
        return not self.is_4_9_1

    @property
    def pc_synchronized_code(self) -> int:
        """`[PC_SYNCHRONIZED]` answers SYSTEM_ERROR(1) up to 5.2 and SYSTEM_BUSY(2) from 5.3 (PR #8054)."""
        if self.is_5x:
            major, minor = _numbers(self.release)[:2]
            if (major, minor) >= (5, 3):
                return ResponseCode.SYSTEM_BUSY
        return ResponseCode.SYSTEM_ERROR

    @property
    def compensates_ha_queue_offsets(self) -> bool:
        """5.2+ in controller mode count the messages past the confirm offset into the next queue offsets when they
        recount them (`ConsumeQueueStore.compensateForHA`, PR #7690 for apache/rocketmq#7689); up to 5.1 a restarted
        master gave new messages the queue offsets of those it had acknowledged past the confirm offset."""
        return self.is_5x and tuple(_numbers(self.release)[:2]) >= (5, 2)

    @property
    def ha_socket_buffer(self) -> int | None:
        """SO_RCVBUF/SO_SNDBUF of both ends of the HA link (the master's HAConnection, the slave's
        RemotingUtil.connect): 64 KiB up to 4.9.2; from 4.9.3 (PR #3826) and in 5.x only when
        com.rocketmq.remoting.socket.sndbuf/rcvbuf.size are set, so the kernel's autotuned buffers by default, which
        let a stalled slave's link take megabytes before the master's writes block."""
        return 64 * 1024 if self.is_4_9_1 else None

    @property
    def reads_magic_v2(self) -> bool:
        """5.1+ `checkMessageAndReturnSize` takes MESSAGE_MAGIC_CODE_V2 records (a 2-byte topic length); up to 5.0
        only MESSAGE_MAGIC_CODE is a message, any other magic code ends recovery and dispatch there."""
        return self.is_5x and tuple(_numbers(self.release)[:2]) >= (5, 1)

    @property
    def logs_half_message(self) -> bool:
        """5.x recovery logs `found a half message at N, it will be truncated.` before a torn record it cuts off."""
        return self.is_5x

    @property
    def slave_rejects_send(self) -> bool:
        """5.x `SendMessageProcessor.rejectRequest` also rejects on a slave that is not acting master."""
        return self.is_5x


def _numbers(release: str) -> list[int]:
    parts = [int(p) for p in re.findall(r"\d+", release)]
    return (parts + [0, 0, 0])[:3]


def profile_for(release: str) -> VersionProfile:
    """The profile covering `release` (`4.9.1`, `4.9.8`, `5.3.0`, `5.x`, ...); VersionError names the allowed ones."""
    text = release.strip()
    if text in ("5", "5.x", "5.X"):
        text = "5.3.0"
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?(\.x|-[A-Za-z]+)?", text):
        raise VersionError(f"RocketMQ version {release!r} not understood; allowed: {ALLOWED}")
    major, minor, patch = _numbers(text)
    if (major, minor) == (4, 9) and patch <= 2:
        name = "4.9.1"
    elif (major, minor) == (4, 9) and patch <= 8:
        name = "4.9.3"
    elif major == 5 and minor <= 3:
        name = "5.x"
    else:
        raise VersionError(f"RocketMQ version {release!r} has no profile; allowed: {ALLOWED}")
    if major == 4:
        wire = 395 + 2 * (patch - 1)
    else:
        wire = 413 + 2 * (10 * minor + patch)
    return VersionProfile(name=name, release=f"{major}.{minor}.{patch}", wire_version=wire,
                          version_desc=f"V{major}_{minor}_{patch}")


def resolve_profile(cli_value: str | None) -> VersionProfile:
    """`--rocketmq-version` if given, else `$ROCKETMQ_VERSION`, else 4.9.1."""
    return profile_for(cli_value or os.environ.get(VERSION_ENV) or DEFAULT_VERSION)
