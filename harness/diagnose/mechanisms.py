"""The mechanisms `rmq-chaos diagnose` knows: the incidents rmq-chaos reproduces (shared DESIGN.md's table, the
shipped scenarios, docs/fidelity.md), each with the fingerprints it explains, what the seed material says about it,
and the shipped scenario that reproduces it.

A mechanism is found when at least one of its `keys` fingerprints is; it then explains every line of its
`explains` fingerprints. `recommend` / `warn` are the seed's own advice (DESIGN.md, the scenarios' comments, the
field reports in fixtures/README.md), never new claims.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mechanism:
    """One broker or client mechanism behind an incident."""

    id: str
    title: str
    keys: tuple[str, ...]
    explains: tuple[str, ...]
    paragraph: str
    recommend: tuple[str, ...]
    warn: tuple[str, ...]
    scenario: str
    """The shipped scenario (scenarios/<name>.yaml) the written reproduction starts from."""
    scenario_below: tuple[tuple[str, int, str], ...] = ()
    """(broker.conf key, value, scenario): a broker.conf that sets the key below the value is reproduced by that
    scenario instead, whose expectations encode what the setting changes; the user's value of the key is kept."""
    scenario_if: tuple[tuple[str, str, str], ...] = ()
    """(broker.conf key, value, scenario): the same for a key set to that value (exactly: the broker's enum names)."""
    variant: tuple[str, str] | None = None
    """(matrix axis, variant name): the scenario's variant that is this mechanism; the reproduction keeps it alone."""

    def scenario_for(self, conf: dict[str, str]) -> tuple[str, str | None]:
        """The shipped scenario that reproduces this mechanism with the broker.conf `conf`, and why when it is not
        the mechanism's own."""
        for key, wanted, name in self.scenario_if:
            value = conf.get(key, "").strip()
            if value == wanted:
                return name, f"broker.conf {key}={value}: scenarios/{name}.yaml, not {self.scenario}.yaml"
        for key, limit, name in self.scenario_below:
            value = conf.get(key, "").strip()
            if value.isdigit() and int(value) < limit:
                return name, f"broker.conf {key}={value} (below {limit}): scenarios/{name}.yaml, not {self.scenario}.yaml"
        return self.scenario, None


MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism(
        "replication-stalled-slave", "a connected slave that stopped replicating holds every SYNC_MASTER send",
        keys=("slave_store_readonly", "transfer_slave_timeout"),
        explains=("slave_store_readonly", "transfer_slave_timeout", "call_timeout", "flush_slave_timeout",
                  "ha_new_connection", "ha_expired_slave", "slave_not_available", "pagecache_slow"),
        paragraph=(
            "The slave's store stopped taking writes (read-only filesystem: 4.9.1 ignores EROFS on its replication "
            "write and keeps acknowledging, so the master answers SEND_OK for data the slave never stored) and at the "
            "next commitlog file replication stops. The slave's HA client reconnects in a loop, so the master still "
            "counts it connected and far less than haSlaveFallbehindMax (256 MiB) behind: isSlaveOK stays true and "
            "GroupTransferService waits up to syncFlushTimeout (5 s) per request, one after another. Producers see "
            "timeouts and RemotingTooMuchRequestException (sendDefaultImpl call timeout), TPS falls to 0, and sends "
            "that failed were still stored on the master."),
        recommend=(
            "lower haSlaveFallbehindMax on the master so producers get SLAVE_NOT_AVAILABLE at once instead of "
            "timeouts (scenario slave-readonly-fallbehind-1m shows the difference)",
            "repair or replace the slave's disk; check the slave's store.log for 'Read-only file system'",
            "count failed sends as possibly stored: consumers will see them, application retries make duplicates"),
        warn=(
            "raising the client's send timeout only waits longer: each request waits syncFlushTimeout in turn",
            "do not trust SEND_OK from before the cliff under SYNC_MASTER: the slave may not hold those messages"),
        scenario="slave-readonly-default",
        # the master's conf (diagnose prefers it) with the gap limit lowered: SLAVE_NOT_AVAILABLE instead of timeouts
        scenario_below=(("haSlaveFallbehindMax", 268435456, "slave-readonly-fallbehind-1m"),)),
    # the slave's own "HAClient, housekeeping ... expired" names no mechanism alone: the real 4.9.1 slave with a
    # read-only store logs it at every turn of its reconnect loop (9 times in one run) while the master keeps it
    # connected; only the master dropping the slave (`ha_expired_master`) names slave-dropped
    Mechanism(
        "slave-dropped", "the master dropped a silent slave after haHousekeepingInterval: SLAVE_NOT_AVAILABLE",
        keys=("ha_expired_master",),
        explains=("ha_expired_master", "ha_expired_slave", "slave_not_available", "transfer_slave_timeout",
                  "call_timeout", "flush_slave_timeout", "ha_new_connection"),
        paragraph=(
            "The slave stopped answering on its HA link (a hung store: writers block; or the link was cut). Sends "
            "wait for it and time out until haHousekeepingInterval (20 s) passes without a report; then the master "
            "logs 'ha housekeeping, found this connection[...] expired', drops the slave, and every SYNC_MASTER send "
            "returns SLAVE_NOT_AVAILABLE within milliseconds, stored on the master only, even with the default "
            "256 MiB haSlaveFallbehindMax. When the slave comes back it reconnects, catches up, and SEND_OK returns."),
        recommend=(
            "find what stopped the slave (hung disk, frozen filesystem, network partition between master and slave)",
            "treat SLAVE_NOT_AVAILABLE as stored on the master only: decide whether the application may go on"),
        warn=(
            "SLAVE_NOT_AVAILABLE is not retried by default (retryAnotherBrokerWhenNotStoreOK is false): do not read it "
            "as a lost message",),
        scenario="slave-frozen"),
    Mechanism(
        "master-lost", "a 4.x master's process died: its broker set takes no sends until it is back",
        keys=("namesrv_master_removed",),
        # the real 4.9.1 in master-killed-consumers: the slave's housekeeping expiry right after the link closed;
        # after the restart, the slave reconnecting (a new HA connection) and one SYNC_MASTER put that waited out
        # syncFlushTimeout for it meanwhile (a transfer timeout 5 s after the reconnect)
        explains=("namesrv_master_removed", "ha_master_closed", "ha_expired_slave", "ha_new_connection",
                  "transfer_slave_timeout", "call_timeout"),
        paragraph=(
            "In a 4.x master/slave broker set (no controller) the slave never becomes master. The master's process "
            "died (a crash, the OOM killer, SIGKILL): its connections closed, the name server logged 'remove "
            "brokerAddr[0, ...] from brokerAddrTable, because channel destroyed' (a graceful stop unregisters "
            "instead), and the slave's HA client saw the link close. Producers get errors for that broker set while "
            "it is down: sends in flight wait out their timeout, new ones fail to connect; there is nothing to send "
            "to unless the topic has queues on other broker sets. Consumers go on from the slave (the client pulls "
            "from the next broker id once the master is gone from the route) and commit their offsets there; once "
            "the master is back they commit to it again, so offsets are not lost, but messages may be delivered "
            "again (offsets are committed every 5 s). When the master is back its slave reconnects and catches up, "
            "and SYNC_MASTER sends meanwhile may wait out syncFlushTimeout ('transfer messsage to slave timeout'). "
            "Under SYNC_MASTER every acknowledged send is on the slave; the master's own store keeps what it "
            "stored."),
        recommend=(
            "find why the master's process died: its stdout and the kernel log (OOM killer), hs_err files; start it "
            "again on its own store",
            "count the producers' errors while it was down as not sent: nothing was stored for them",
            "for a broker set that stays writable when its master dies, RocketMQ 5's controller mode elects the "
            "slave (scenario master-killed-controller)"),
        warn=(
            "expect duplicates on the consumer side after the master is back: consumers redeliver from the offsets "
            "committed last (every 5 s)",),
        scenario="master-killed-consumers"),
    Mechanism(
        "brokers-expired", "the name server heard nothing from brokers for 120 s and dropped them from the routes",
        keys=("namesrv_broker_expired", "namesrv_broker_idle"),
        explains=("namesrv_broker_expired", "namesrv_broker_idle", "namesrv_master_removed"),
        paragraph=(
            "Brokers register with every name server every 30 s; a name server drops a broker it has not heard from "
            "for 120 s and takes its queues out of the topics' routes: its connection's idle handler closes it "
            "first ('NETTY SERVER PIPELINE: IDLE exception' after serverChannelMaxIdleTimeSeconds, then 'the "
            "broker's channel destroyed' and 'remove brokerAddr[...], because channel destroyed': the real 4.9.1 "
            "did so), or its 10 s scan finds it expired (BROKER_CHANNEL_EXPIRED_TIME: 'The broker channel "
            "expired'). The name server's host was cut off from the brokers (a network partition), or the brokers "
            "could not send. Clients that cannot reach the name server keep the routes they hold (they refresh "
            "every 30 s), so producers go on "
            "sending to the brokers with SEND_OK; once the brokers reach the name server again they register within "
            "30 s and the routes are whole again."),
        recommend=(
            "check the network between the name server's host and the brokers' hosts at the time of the expiry "
            "lines (scenario namesrv-partition cuts exactly that)",),
        warn=(
            "do not restart the brokers to bring the routes back: once the name server is reachable they register "
            "again by themselves within 30 s",),
        scenario="namesrv-partition"),
    Mechanism(
        "page-cache-busy", "a write stall inside the commitlog lock: fast failure answers code 2 (system busy)",
        keys=("timeout_clean_queue", "pcbusy_clean_queue", "reject_request", "pc_synchronized", "lock_cost",
              "overload"),
        explains=("timeout_clean_queue", "pcbusy_clean_queue", "reject_request", "pc_synchronized", "lock_cost",
                  "overload", "pagecache_slow"),
        paragraph=(
            "A put blocked inside the put-message lock (slow or frozen disk, swapping, a GC-like pause). "
            "BrokerFastFailure sweeps the send queue every 10 ms: a request queued longer than "
            "waitTimeMillsInSendQueue (200 ms) is answered code 2 [TIMEOUT_CLEAN_QUEUE]; once the lock has been held "
            "longer than osPageCacheBusyTimeOutMills (1000 ms) the page cache counts as busy and sends are answered "
            "[PCBUSY_CLEAN_QUEUE] / [REJECTREQUEST] (also when the transient store pool is empty), [PC_SYNCHRONIZED] "
            "from putMessage itself, [OVERLOAD] when the send pool's queue is full. The 4.9.1 client does not retry "
            "code 2 in a sync send, so these reach the application."),
        recommend=(
            "find the stall: the master's disk throughput and latency, its swap (VmSwap), GC pauses; store.log's "
            "[PAGECACHERT] lines show how long puts took",
            "handle code 2 in the application (retry after a pause): the client does not",
            "on an ASYNC_FLUSH master, transientStorePoolEnable lets puts go on into off-heap buffers through a short "
            "stall (scenario transient-store-pool)"),
        warn=(
            "do not raise osPageCacheBusyTimeOutMills: requests then wait longer in the lock instead of failing fast",
            "do not turn off fast failure (brokerFastFailureEnable=false): queued sends then time out in the client "
            "instead of getting an answer"),
        scenario="transient-store-pool"),
    Mechanism(
        "store-flush-slow", "the master's disk writes slowly: every flush, and each SYNC_FLUSH acknowledgement, waits",
        keys=("flush_thread_in_force", "flush_costs"),
        explains=("flush_thread_in_force", "flush_costs", "pagecache_slow"),
        paragraph=(
            "The disk under the master's store writes slowly (an I/O limit, a saturated or failing device). The "
            "commitlog's flush thread spends its time in msync: a jstack shows GroupCommitService (SYNC_FLUSH) or "
            "FlushRealTimeService (ASYNC_FLUSH) RUNNABLE in MappedByteBuffer.force, and an asynchronous flush over "
            "500 ms is logged 'Flush data to disk costs N ms'. Under SYNC_FLUSH every acknowledgement waits for the "
            "flush that covers it: sends keep getting SEND_OK, each late (the real 4.9.1 with 1 MiB/s of write "
            "bandwidth: p99 from a few ms to about 500 ms), the broker's throughput falls to what the disk carries, "
            "and producers sending at a fixed rate fall behind. The put itself only appends to the page cache, so no "
            "code 2 appears while the page cache absorbs the writes; a put that blocks in the lock is page-cache-busy. "
            "4.9.1 waits for the flush without a bound; 4.9.3 and later answer FLUSH_DISK_TIMEOUT after "
            "syncFlushTimeout (5 s)."),
        recommend=(
            "measure the master's disk at the time of the lines (iostat -x: write latency, utilisation) and find what "
            "limits it: a cgroup or cloud volume's I/O limit, another writer, a failing device",
            "take several jstacks of the master seconds apart: the flush thread in force0 in most of them is a slow "
            "disk; in one of them, an ordinary flush"),
        warn=(
            "switching to ASYNC_FLUSH hides the wait but changes what SEND_OK means: acknowledged messages in the "
            "page cache only are lost if the host crashes",),
        scenario="master-disk-throttle",
        # an ASYNC_FLUSH master acknowledges before the flush: the late acknowledgements are SYNC_FLUSH's
        scenario_if=(("flushDiskType", "ASYNC_FLUSH", "master-disk-throttle-async"),)),
    Mechanism(
        "broker-swapping", "the broker's JVM was swapping: its GC pauses waited for pages read back from swap",
        keys=("gc_pause_in_kernel", "process_swapped"),
        explains=("gc_pause_in_kernel", "process_swapped", "pagecache_slow"),
        paragraph=(
            "The broker's memory (heap, direct buffers, mapped commitlog) did not fit in what its host or container "
            "gave it, and the kernel swapped part of it out. A thread that touches a swapped-out page waits in the "
            "kernel for it to be read back; a GC pause touches many pages at once, so it grows and most of its CPU "
            "time is the kernel's (the real 4.9.1 with a 256 MiB heap in a 64 MiB memory cgroup: young pauses of "
            "5-17 ms became 107-164 ms, Sys 0.08-0.12 s against User 0.02-0.03 s). Sends keep getting SEND_OK and "
            "the latency tail grows with every pause. How far depends on the swap device: on a slow one a put that "
            "faults inside the commitlog lock holds it long enough for code 2 (page-cache-busy). The process's status "
            "shows the swapping itself: VmSwap, the part of it in swap (master-swapping's master: 319-333 MiB on the "
            "real 4.9.1, 235-239 MiB on the emulator)."),
        recommend=(
            "check the broker process's VmSwap (/proc/<pid>/status) and its memory limit against -Xmx, "
            "MaxDirectMemorySize and metaspace",
            "keep broker memory out of swap: a memory limit above the JVM's footprint, and vm.swappiness=1 as the "
            "distribution's bin/os.sh sets it"),
        warn=(
            "do not raise -Xmx within the same memory limit: a larger heap leaves less room and swaps more",),
        scenario="master-swapping"),
    Mechanism(
        "stuck-consumer-listener", "consume threads blocked in the listener: one group's lag grows, the broker is fine",
        keys=("consumer_flow_control", "consume_thread_blocked"),
        explains=("consumer_flow_control", "consume_thread_blocked", "pagecache_fast"),
        paragraph=(
            "A consume thread is blocked in the listener (e.g. an HTTP call without a timeout: RUNNABLE in a socket "
            "read). The push consumer commits the smallest offset still in its process queue, so the group's "
            "committed offset stops at the first blocked message; once a queue holds 1000 messages (or spans 2000 "
            "offsets, or 100 MiB) the client stops pulling ('so do flow control') and the group's lag grows with the "
            "load, while another group on the same topic keeps up and [PAGECACHERT] stays fast: the broker serves the "
            "topic."),
        recommend=(
            "put a timeout on every call the listener makes; take a jstack of the consumer and look at its "
            "ConsumeMessageThread_ threads",
            "compare the groups' lag on the same topic (mqadmin consumerProgress): one keeping up proves the broker"),
        warn=(
            "do not scale or tune the broker, or raise pullThresholdForQueue / consumeThreadMax: the broker is not the "
            "cause and more threads block the same way",
            "a restart releases the threads but redelivers from the stopped offset: expect duplicates"),
        scenario="consumer-backlog-stuck-thread"),
    Mechanism(
        "controller-failover", "controller mode: the master was lost and the controller elected another broker",
        keys=("controller_new_master",),
        explains=("controller_new_master", "controller_broker_inactive", "controller_broker_expired",
                  "ha_new_connection", "syncstateset_shrunk"),
        paragraph=(
            "In controller mode (RIP-44) every broker heartbeats to the controller and the master reports its "
            "SyncStateSet. The master's heartbeat connection closed (its process died: 'Channel ... inactive') or "
            "went silent for controllerHeartBeatTimeoutMills (10 s: 'The broker channel ... expired'), and the "
            "controller elected a broker of the SyncStateSet in a new epoch ('Change ha to master success, "
            "newMasterEpoch:2' in the new master's store.log). Producers fail until the name server's route names "
            "the new master and their route refresh finds it (up to 30 s); with allAckInSyncStateSet=true nothing "
            "acknowledged is lost. The new master answers consumers with its own copy of their offsets, which may "
            "be some seconds old until the clients commit again."),
        recommend=(
            "find why the old master was lost (its process, its host, its heartbeat's network)",
            "check that nothing acknowledged was lost: allAckInSyncStateSet=true acknowledges a send only once "
            "every broker of the SyncStateSet has it (scenario master-killed-controller: none lost)"),
        warn=(
            "a consumer that starts, or takes over queues, right after the switch starts from the new master's "
            "older copy of the offsets: expect redeliveries (scenario master-killed-controller-consumers)",),
        scenario="master-killed-controller"),
    Mechanism(
        "controller-failover-offsets",
        "controller mode: the master was lost under consumer groups; the new master answers them with its older copy "
        "of their offsets",
        keys=("controller_offsets_behind",),
        explains=("controller_offsets_behind", "controller_new_master", "controller_broker_inactive",
                  "controller_broker_expired", "ha_new_connection", "syncstateset_shrunk"),
        paragraph=(
            "In controller mode (RIP-44) the master was lost and the controller elected a broker of the SyncStateSet "
            "('Change ha to master success, newMasterEpoch:2'), while consumer groups were connected. The consumer "
            "offsets the new master holds are the copy it last took as a slave (SlaveSynchronize: 'Update slave "
            "consumer offset from master', once more than 10 s have passed, looked at every 3 s), so until the "
            "clients find the new route and commit theirs (every 5 s; the route refresh takes up to 30 s), the "
            "offsets it answers go back by up to some 13 s of consumption (apache/rocketmq#1094, #9711). Running "
            "clients keep their positions in memory and deliver nothing twice; a consumer that starts, restarts or "
            "takes over queues in that window starts from the older copy and gets those messages again."),
        recommend=(
            "find why the old master was lost (its process, its host, its heartbeat's network)",
            "compare the groups' offsets on the new master (mqadmin consumerProgress) with what they had consumed: "
            "the gap is the window of the last sync (scenario master-killed-controller-consumers: 481 messages on "
            "the real 5.3.0, nothing delivered twice to the running clients)"),
        warn=(
            "do not restart or scale consumers right after the switch: a consumer that starts then takes the older "
            "copy and redelivers (make the listener idempotent)",),
        scenario="master-killed-controller-consumers"),
    Mechanism(
        "in-sync-replica-dropped",
        "controller mode: the master dropped a slave that stopped replicating from the SyncStateSet and acks alone",
        keys=("syncstateset_shrunk", "epoch_file_unreadable"),
        explains=("syncstateset_shrunk", "epoch_file_unreadable", "slave_store_readonly", "ha_expired_master",
                  "ha_expired_slave", "ha_new_connection", "transfer_slave_timeout", "flush_slave_timeout"),
        paragraph=(
            "In controller mode (RIP-44) with allAckInSyncStateSet=true the master acknowledges a send once every "
            "broker of its SyncStateSet has it. A slave stopped replicating (its store read-only: 'Read-only file "
            "system' in its store.log; frozen; or its HA link cut); when its HA connection closed, or it stayed "
            "behind for haMaxTimeSlaveNotCatchup (15 s), the master had the controller shrink the set ('SyncStateSet "
            "changed from [1, 2] to [1]' in its broker.log) and from then on acknowledges alone (minInSyncReplicas=1, "
            "the default). Producers see SEND_OK throughout; what the master acknowledges while the slave is out is "
            "on the master only, and should the master be lost then, no broker of the set is left to elect. A slave "
            "whose store failed this way may not start again: its first epoch file, written without fsync, can be "
            "empty on disk after the error, and 5.3.0 exits reading it (NumberFormatException in "
            "EpochFileCache.initCacheFromFile)."),
        recommend=(
            "repair the slave (its disk: check its store.log for 'Read-only file system'; its process; its network): "
            "it rejoins the SyncStateSet once it has caught up",
            "check the broker set's SyncStateSet (mqadmin getSyncStateSet) while it runs short",
            "to have sends fail instead of being acknowledged by the master alone, set minInSyncReplicas above 1: "
            "a short set then answers 'in-sync replicas not enough'"),
        warn=(
            "a slave whose store failed may not start again: 5.3.0 exits on an epochFileCheckpoint that is empty on "
            "disk (scenario slave-readonly-controller); the repair is to remove that file",
            "do not trust that SEND_OK means two copies while the set is short: the master alone has those messages"),
        scenario="slave-readonly-controller"),
    Mechanism(
        "controller-no-in-sync-replica",
        "controller mode: the master was lost with no other broker in its SyncStateSet, and nobody was elected",
        keys=("controller_elect_failed",),
        explains=("controller_elect_failed", "controller_broker_inactive", "controller_broker_expired",
                  "syncstateset_shrunk"),
        paragraph=(
            "The master was lost while no other broker was in its SyncStateSet (the master had dropped its slave "
            "from it: fallen behind for haMaxTimeSlaveNotCatchup, or its HA connection lost). With enableElectUncleanMaster=false, the default, "
            "the controller elects no broker outside the set ('Failed to elect a new master for broker ...'): the "
            "broker set takes no writes until the old master is back, and nothing acknowledged is lost. With it "
            "true, an out-of-sync slave is elected at once and what the old master acknowledged alone is lost."),
        recommend=(
            "bring the old master back: it is the only broker with every acknowledged message",
            "find why the slave was out of the SyncStateSet when the master was lost (its disk, its network)"),
        warn=(
            "turning enableElectUncleanMaster on trades the outage for loss: the elected slave lacks what the old "
            "master acknowledged alone (scenario unclean-election shows both)",),
        scenario="unclean-election", variant=("unclean", "off")),
    Mechanism(
        "controller-unclean-election",
        "controller mode: a broker outside the SyncStateSet was elected master, without what the old one acked alone",
        keys=("controller_unclean_master",),
        explains=("controller_unclean_master", "controller_new_master", "controller_elect_failed",
                  "controller_broker_inactive", "controller_broker_expired", "syncstateset_shrunk", "ha_expired_master", "ha_new_connection",
                  "transfer_slave_timeout"),
        paragraph=(
            "The master had dropped its slave from the SyncStateSet ('SyncStateSet changed from [1, 2] to [1]': the "
            "slave fell behind for haMaxTimeSlaveNotCatchup or its HA connection closed) and acknowledged alone; "
            "then the master was lost. With enableElectUncleanMaster=true the controller elects any live broker of "
            "the set when none in the SyncStateSet is alive, so the out-of-sync slave became master ('Change broker "
            "[id:2]... to SYNC_MASTER, ... newMasterEpoch:2' for a broker not in the last set): producers were back "
            "within seconds, but what the old master acknowledged after dropping the slave is not on the new master. "
            "When the old master returns it joins as a slave and truncates its log to the new epoch's start "
            "('truncateOffset is ...' in its store.log): those messages are gone (unclean-election on: 343 "
            "acknowledged sends lost on the real 5.3.0, 344 on the emulator). When the slave's first heartbeat "
            "reaches the controller after the master's closed channel, the first try fails ('Failed to elect a new "
            "master') and the next, 5 s later, elects it."),
        recommend=(
            "count what was lost: the old master acknowledged alone from its SyncStateSet shrink to its death; a "
            "read-back of every queue on the new master against the producers' records shows which",
            "find why the slave was out of the SyncStateSet (its disk, its network) before the master was lost"),
        warn=(
            "do not keep enableElectUncleanMaster=true where an acknowledged message must not be lost: with it off "
            "the broker set waits for the old master instead (scenario unclean-election, variant off)",),
        scenario="unclean-election", variant=("unclean", "on")),
    Mechanism(
        "syncstateset-expansion-race",
        "controller mode: the master was lost seconds after taking a lagging slave back into the SyncStateSet, and "
        "that slave was elected",
        keys=("controller_elected_after_rejoin",),
        explains=("controller_elected_after_rejoin", "controller_new_master", "controller_broker_inactive",
                  "controller_broker_expired", "syncstateset_shrunk", "ha_expired_master", "ha_expired_slave",
                  "ha_new_connection", "transfer_slave_timeout"),
        paragraph=(
            "A slave had left the master's SyncStateSet (fallen behind, frozen, its HA link lost), caught up, and "
            "the master had the controller take it back in ('SyncStateSet changed from [1] to [1, 2]'); within "
            "seconds the master was lost and the controller elected that slave. This is the moment of "
            "apache/rocketmq#5663: on 5.0.0 to 5.1.0, while the master's request to expand the set was in flight, "
            "it went on acknowledging against its old set, so what it acknowledged then need not be on the slave the "
            "controller already counted in sync, and the new master could lack acknowledged messages. 5.1.1 fixed "
            "it (PR #5798: while the change is in flight the master counts the new member too). On 5.3.0 (the real "
            "broker and the emulator, scenario syncstateset-expansion-race) the slave is elected at once and nothing "
            "acknowledged is lost."),
        recommend=(
            "on 5.0.x or 5.1.0, check what the new master holds against what producers were acknowledged (a "
            "read-back of every queue), and upgrade to 5.1.1 or later",
            "find why the slave left the SyncStateSet before (its disk, its process, its network)"),
        warn=(
            "allAckInSyncStateSet=true does not cover this window before 5.1.1: the old set is what the master "
            "waited for",),
        scenario="syncstateset-expansion-race"),
    Mechanism(
        "controller-epoch-conflict",
        "controller mode: the master came back in its old epoch, and its slave cannot rejoin the SyncStateSet",
        keys=("ha_no_consistent_point",),
        explains=("ha_no_consistent_point",),
        paragraph=(
            "The master died together with the controller that led the controllers (apache/rocketmq#7689's crash) "
            "and came back before the new leader looked for a dead master, so the controller named it master again "
            "in the same epoch. Becoming master it cut that epoch from its epoch file and began it again at its "
            "log's end. The slave's entry for the epoch still begins where it began, so every HA handshake ends in "
            "'Failed to find a consistent point' and the slave stays out of the SyncStateSet: the broker set runs "
            "without a replica, and what it acknowledges is on the master alone. On 5.0 and 5.1 the same restart "
            "also gave new messages the queue offsets of those the master had acknowledged past its confirm offset "
            "(lost to consumers; fixed in 5.2.0 by PR #7690)."),
        recommend=(
            "check the broker set's SyncStateSet (mqadmin getSyncStateSet): while the slave is out of it, a second "
            "loss of the master has no in-sync broker to elect",
            "compare the master's and the slave's epochs (mqadmin getBrokerEpoch): the same epoch starting at two "
            "offsets is this case; the slave does not repair it by itself"),
        warn=(
            "on 5.0 or 5.1 do not trust what a restarted master acknowledged before the crash: check it with a "
            "read-back of every queue (5.2.0 fixed the queue offsets)",),
        scenario="controller-and-master-killed"),
)
BY_ID = {m.id: m for m in MECHANISMS}
