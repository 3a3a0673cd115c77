"""The log texts `rmq-chaos diagnose` looks for: one `Fingerprint` per kind of line, with the literal it is found by.

Each text is the real broker's or client's own (Apache RocketMQ 4.9.x and 5.x sources, and the logs of the real
4.9.1 run by rmq-chaos: docs/diagnose.md): the broker's store.log / broker.log lines, the client's
rocketmq_client.log, the application's exceptions (the response remarks travel into `MQBrokerException` texts) and
jstack dumps. A fingerprint is found by plain substring search (`anchors`, bytes), which is what makes a 1 GiB
directory take seconds; the few that need more than presence (`[PAGECACHERT]` bucket counts, a jstack thread's
state and frames) are read further by `harness.diagnose.scan`.

Which fingerprints name a mechanism on their own and which only support one is the mechanism's (`keys`,
`harness.diagnose.mechanisms`): a healthy broker also logs new HA connections and `[PAGECACHERT]` lines.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fingerprint:
    """One kind of evidence line."""

    id: str
    anchors: tuple[bytes, ...]
    what: str
    sampled: bool = False
    """Read from a thread dump: where a thread was at one moment, not an event a log recorded (ranks after those)."""


FINGERPRINTS: tuple[Fingerprint, ...] = (
    # the master's group-transfer wait ended by syncFlushTimeout (4.9.x spells "messsage"; 5.x "message")
    Fingerprint("transfer_slave_timeout", (b"transfer messsage to slave timeout", b"transfer message to slave timeout"),
                "master: a SYNC_MASTER put waited syncFlushTimeout for the slave (store.log)"),
    Fingerprint("slave_store_readonly", (b"Read-only file system",),
                "a store write failed with EROFS: the store's filesystem is read-only"),
    Fingerprint("ha_expired_master", (b"ha housekeeping, found this connection[",),
                "master: the slave's HA connection sent nothing for haHousekeepingInterval and was dropped"),
    Fingerprint("ha_expired_slave", (b"HAClient, housekeeping, found this connection[",
                                     b"AutoSwitchHAClient, housekeeping, found this connection["),
                "slave: the master's HA connection sent nothing for haHousekeepingInterval"),
    # 5.x controller mode: the slave's epoch entries and the master's share no epoch that starts at the same offset
    Fingerprint("ha_no_consistent_point", (b"Failed to find a consistent point between",),
                "slave (controller mode): its epochs and the master's disagree; it cannot truncate to rejoin"),
    # 5.x controller mode. The broker's store.log when it becomes master (AutoSwitchHAService.changeToMaster); read
    # further by the scan: only an epoch of 2 or more counts (epoch 1 is the first election, at the cluster's start)
    Fingerprint("controller_new_master", (b"Change ha to master success, newMasterEpoch:",),
                "broker (controller mode): it became master in a later epoch: a failover elected it"),
    # 5.x controller mode: the master's broker.log (ReplicasManager.changeSyncStateSet) when the controller accepted
    # a new SyncStateSet; read further by the scan: only a set with fewer brokers than before counts (a shrink)
    Fingerprint("syncstateset_shrunk", (b"SyncStateSet changed from [",),
                "master (controller mode): a broker left the SyncStateSet (fallen behind or its HA link lost)"),
    # 5.x controller mode, the broker's stdout as it fails to start: its epoch checkpoint file is empty on disk (written
    # without fsync, then a disk error aborted ext4's journal), Integer.parseInt(null) in CheckpointFile.read
    Fingerprint("epoch_file_unreadable", (b"EpochFileCache.initCacheFromFile(",),
                "broker (controller mode): could not read its epoch file at start and exited"),
    # the controller's log (DefaultBrokerHeartbeatManager, ReplicasInfoManager)
    # 5.x controller mode: a broker that became master in a failover epoch was not in the last SyncStateSet its
    # master logged: elected from outside the set (`harness.diagnose.elections`, settled once every file is read)
    Fingerprint("controller_unclean_master", (),
                "broker (controller mode): became master from outside the SyncStateSet (enableElectUncleanMaster)"),
    # the same, for a broker elected within 15 s of being taken back into the set it had left (#5663's moment)
    Fingerprint("controller_elected_after_rejoin", (),
                "broker (controller mode): elected master seconds after the master took it back into the SyncStateSet"),
    # the same, for a broker elected while consumer groups were connected: its last copy of their offsets, taken as a
    # slave (`Update slave consumer offset from master`), is what it answers them with
    Fingerprint("controller_offsets_behind", (),
                "broker (controller mode): elected under consumer groups; its offsets are its last copy of the old "
                "master's"),
    Fingerprint("controller_broker_inactive", (b"inactive, broker ",),
                "controller: a broker's heartbeat connection closed"),
    Fingerprint("controller_broker_expired", (b"expired, brokerInfo ",),
                "controller: a broker sent no heartbeat for controllerHeartBeatTimeoutMills"),
    Fingerprint("controller_elect_failed", (b"Failed to elect a new master for broker ",),
                "controller: no broker of the SyncStateSet is alive to be elected (unclean election off)"),
    Fingerprint("ha_new_connection", (b"HAService receive new connection",),
                "master: a slave (re)connected its HA link"),
    # 4.9.x's HAClient when the master's end of the HA link closed (the master's process died or stopped)
    Fingerprint("ha_master_closed", (b"HAClient, processReadEvent read socket < 0",),
                "slave: the master closed the HA connection"),
    # 4.9.x RouteInfoManager.onChannelDestroy for brokerId 0: the master's connection to the name server closed
    # without an unregister (4.9.x logs a graceful stop as "unregisterBroker, ...") or expired
    Fingerprint("namesrv_master_removed", (b"remove brokerAddr[0, ",),
                "name server: a master left the route without unregistering (its connection closed or expired)"),
    # Netty's idle handler on the name server closed a broker's connection silent for serverChannelMaxIdleTimeSeconds
    # (120 s); read further by the scan: only when the route table's "the broker's channel destroyed" follows (a
    # client's idle connection is closed the same way and names nothing). The real 4.9.1 dropped its brokers so,
    # before its 10 s scan found them expired
    Fingerprint("namesrv_broker_idle", (b"NETTY SERVER PIPELINE: IDLE exception",),
                "name server: a broker's connection carried nothing for 120 s (serverChannelMaxIdleTimeSeconds) and "
                "was closed"),
    Fingerprint("namesrv_broker_expired", (b"The broker channel expired, ",),
                "name server: a broker sent no registration for 120 s (BROKER_CHANNEL_EXPIRED_TIME) and was dropped"),
    Fingerprint("call_timeout", (b"sendDefaultImpl call timeout",),
                "client: RemotingTooMuchRequestException, the send's whole timeout budget ran out"),
    Fingerprint("flush_slave_timeout", (b"FLUSH_SLAVE_TIMEOUT",),
                "client: SendStatus FLUSH_SLAVE_TIMEOUT (the slave did not confirm within syncFlushTimeout)"),
    Fingerprint("slave_not_available", (b"SLAVE_NOT_AVAILABLE",),
                "client: SendStatus SLAVE_NOT_AVAILABLE (no slave, or one too far behind)"),
    Fingerprint("timeout_clean_queue", (b"[TIMEOUT_CLEAN_QUEUE]",),
                "code 2: a send waited in the broker's send queue longer than waitTimeMillsInSendQueue"),
    Fingerprint("pcbusy_clean_queue", (b"[PCBUSY_CLEAN_QUEUE]",),
                "code 2: fast failure while the page cache was busy (put lock held > osPageCacheBusyTimeOutMills)"),
    Fingerprint("reject_request", (b"[REJECTREQUEST]",),
                "code 2: the send processor rejected (page cache busy, or the transient store pool empty)"),
    Fingerprint("pc_synchronized", (b"[PC_SYNCHRONIZED]",),
                "putMessage found the page cache busy (code 1 up to 5.2, code 2 from 5.3)"),
    Fingerprint("overload", (b"[OVERLOAD]", b"too many requests and system thread pool busy"),
                "code 2: the send thread pool's queue was full (sendThreadPoolQueueCapacity)"),
    Fingerprint("lock_cost", (b"putMessage in lock cost time",),
                "master: one put held the commitlog lock over 500 ms (store.log [NOTIFYME])"),
    Fingerprint("pagecache_slow", (), "master: [PAGECACHERT] minutes with puts of 500 ms or more"),
    Fingerprint("pagecache_fast", (), "master: [PAGECACHERT] minutes with at least 99 % of puts under 10 ms"),
    # 4.9.x and 5.x FlushRealTimeService (ASYNC_FLUSH) after one flush of the commitlog over 500 ms
    Fingerprint("flush_costs", (b"Flush data to disk costs ",),
                "master: one asynchronous flush of the commitlog to disk took over 500 ms (store.log)"),
    Fingerprint("flush_thread_in_force", (),
                "jstack: the commitlog's flush thread (GroupCommitService, FlushRealTimeService) RUNNABLE in msync",
                sampled=True),
    Fingerprint("gc_pause_in_kernel", (),
                "GC log: a pause of 50 ms or more that spent more CPU time in the kernel than in the JVM (page faults)"),
    # /proc/<pid>/status of a broker process (an operator's `grep ^Vm`, the harness's logs/<node>/memory-status.log);
    # read further by the scan: only VmSwap of PROCESS_SWAPPED_KIB or more counts
    Fingerprint("process_swapped", (),
                "/proc/<pid>/status: 16 MiB or more of the process in swap (VmSwap)", sampled=True),
    Fingerprint("consumer_flow_control", (b"so do flow control",),
                "client: a process queue held too many / too old messages, pulling stopped (rocketmq_client.log)"),
    Fingerprint("consumer_flow_control_moving", (),
                "client: flow control in a group whose oldest cached message kept moving: slow, not stuck"),
    Fingerprint("consume_thread_blocked", (),
                "jstack: a ConsumeMessageThread_ RUNNABLE in a socket read (a listener's call without a timeout)",
                sampled=True),
)
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
