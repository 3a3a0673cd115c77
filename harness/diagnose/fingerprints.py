"""The log texts `rmq-chaos diagnose` looks for: one `Fingerprint` per kind of line, with the literal it is found by.

Each text is the real broker's or client's own (Apache RocketMQ 4.9.x and 5.x sources, and the logs of the real
4.9.1 run by rmq-chaos: docs/diagnose.md): the broker's store.log / broker.log lines, the client's
rocketmq_client.log, the application's exceptions (the response remarks travel into `MQBrokerException` texts) and
jstack dumps. A fingerprint is found by plain substring search (`anchors`, bytes), which is what makes a 1 GiB
directory take seconds; the few that need more than presence (`[PAGECACHERT]` bucket counts, a jstack thread's
state and frames) are read further by `harness.diagnose.scan`.

Which fingerprints name a mechanism on their own and which only support one is the mechanism's (`keys`,
`harness.diagnose.mechanisms`): a healthy broker also logs new HA connections and `[PAGECACHERT]` lines.

The catalog is data: fingerprints.yaml beside this module (with where each text comes from), loaded once at import
into `FINGERPRINTS`, in the file's order.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.diagnose import catalog


@dataclass(frozen=True)
class Fingerprint:
    """One kind of evidence line."""

    id: str
    anchors: tuple[bytes, ...]
    what: str
    sampled: bool = False
    """Read from a thread dump: where a thread was at one moment, not an event a log recorded (ranks after those)."""


FINGERPRINTS: tuple[Fingerprint, ...] = catalog.load(Fingerprint, "fingerprints.yaml")
BY_ID = {f.id: f for f in FINGERPRINTS}
PAGECACHERT = b"[PAGECACHERT]"
JSTACK_CONSUME_THREAD = b'"ConsumeMessageThread_'
JSTACK_FLUSH_THREADS = (b'GroupCommitService"', b'FlushRealTimeService"')
"""The end of the thread's name in a jstack header (5.x in a broker container puts the broker's identity before it)."""
FORCE_FRAMES = (b"MappedMemoryUtils.force0", b"MappedByteBuffer.force0", b"FileDispatcherImpl.force0")
"""msync of a mapped commitlog file (JDK 9+, JDK 8), or FileChannel.force (a transient store pool's file)."""
GC_CPU = (b" Sys=", b"[Times: user=")
"""A GC pause's CPU times: unified logging's `[gc,cpu] GC(4) User=0.03s Sys=0.08s Real=0.11s` (JDK 9+, -Xlog:gc*),
JDK 8's `[Times: user=0.03 sys=0.08, real=0.11 secs]` (-XX:+PrintGCDetails)."""
MASTER_CHANGE = b"Change broker [id:"
"""5.x ReplicasManager.registerBrokerWhenRoleChange: a broker's id, new role and epoch (`harness.diagnose.elections`)."""
OFFSETS_SYNCED = b"Update slave consumer offset from master, "
"""4.9.x and 5.x SlaveSynchronize.syncConsumerOffset, at each sync (`harness.diagnose.elections`)."""
CONSUMER_CONNECTED = b"new consumer connected, group: "
"""4.9.x and 5.x ConsumerGroupInfo.updateChannel: a client of a group registered with a broker."""
VM_SWAP = b"VmSwap:"
PROCESS_SWAPPED_KIB = 16 * 1024
"""A process with a few pages in swap on a host that once ran short is common and harmless; 16 MiB of a broker is
memory it will fault back in under load (the master-swapping runs here: hundreds of MiB)."""
SOCKET_READ_FRAMES = (b"socketRead0", b"SocketInputStream.read", b"SocketDispatcher.read", b"NioSocketImpl.read")
