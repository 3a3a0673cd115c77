"""GET_BROKER_RUNTIME_INFO's table: the keys a real 4.9.1 broker returns (recorded `28_GET_BROKER_RUNTIME_INFO.json`)
with live values, in Java HashMap order, plus HA keys 4.9.1 does not have (documented in docs/emulator.md):
`haConnectionCount`, `haPush2SlaveMaxOffset`, `haSlaveAckOffset` (-1 until the slave's first report),
`haSlaveFallbehindBytes`, `haConnectionZeroTimes` / `haConnectionZeroLastMicros` / `haConnectionZeroMaxMicros` (how
often and how long the connection count stayed at zero before a slave was counted again) on a master,
`haClientConnected`, `haMasterAddress` on a slave; 5.x adds `brokerActive` as 5.3.0 does."""
from __future__ import annotations

import math
import os
import time

from emulator.processors.context import BrokerContext
from remoting.hashmap import java_ordered

RUNTIME_MAP_CAPACITY = 64


def human_bytes(n: int) -> str:
    """`MixAll.humanReadableByteCount(bytes, false)`."""
    if n < 1024:
        return f"{n} B"
    exp = int(math.log(n) / math.log(1024))
    return f"{n / 1024 ** exp:.1f} {'KMGTPE'[exp - 1]}iB"


def java_double(x: float) -> str:
    """`Double.toString`: plain between 1e-3 and 1e7, else `d.dddE-n`, shortest digits as both languages use."""
    if x == 0:
        return "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(float(x))
        return text if "." in text else text + ".0"
    exp = math.floor(math.log10(abs(x)))
    mantissa = repr(round(x / 10**exp, 15))
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{exp}"


def _runtime(boot_ms: int) -> str:
    secs = int(time.time() - boot_ms / 1000)
    return f"[ {secs // 86400} days, {secs // 3600 % 24} hours, {secs // 60 % 60} minutes, {secs % 60} seconds ]"


def runtime_table(ctx: BrokerContext) -> dict[str, str]:
    store, config, stats = ctx.store, ctx.config, ctx.store.stats
    commitlog = store.commitlog
    send = ctx.executors.get("send")
    pull = ctx.executors.get("pull")
    ratio = ctx.disk_ratio()
    try:
        st = os.statvfs(config.commitlog_dir())
        capacity = f"Total : {human_bytes(st.f_blocks * st.f_frsize)}, Free : {human_bytes(st.f_bavail * st.f_frsize)}."
    except OSError:
        capacity = "Total : 0 B, Free : 0 B."
    total = stats.put_times_total or 1
    t = {
        "bootTimestamp": str(stats.boot_ms),
        "runtime": _runtime(stats.boot_ms),
        "putMessageEntireTimeMax": str(stats.put_entire_time_max),
        "putMessageTimesTotal": str(total),
        "putMessageSizeTotal": str(stats.put_size_total),
        "putMessageDistributeTime": stats.distribution_string(),
        "putMessageAverageSize": java_double(stats.put_size_total / total),
        "dispatchMaxBuffer": "0",
        "getMessageEntireTimeMax": "0",
        "putTps": stats.put_tps(),
        "getFoundTps": f"{stats.tps(10) and '0.0'}  ",
        "getMissTps": "0.0  ",
        "getTotalTps": "0.0 0.0 0.0",
        "getTransferedTps": "0.0  ",
        "commitLogDiskRatio": java_double(ratio),
        "consumeQueueDiskRatio": java_double(ratio),
        "commitLogMinOffset": str(max(commitlog.min_offset(), 0)),
        "commitLogMaxOffset": str(commitlog.max_offset()),
        "brokerVersionDesc": ctx.profile.version_desc,
        "brokerVersion": str(ctx.profile.wire_version),
        "msgPutTotalYesterdayMorning": "0",
        "msgPutTotalTodayMorning": "0",
        "msgPutTotalTodayNow": str(stats.put_times_total),
        "msgGetTotalYesterdayMorning": "0",
        "msgGetTotalTodayMorning": "0",
        "msgGetTotalTodayNow": str(stats.get_found),
        "sendThreadPoolQueueSize": str(send.size() if send else 0),
        "sendThreadPoolQueueCapacity": str(config.get_int("sendThreadPoolQueueCapacity")),
        "pullThreadPoolQueueSize": str(pull.size() if pull else 0),
        "pullThreadPoolQueueCapacity": str(config.get_int("pullThreadPoolQueueCapacity")),
        "queryThreadPoolQueueSize": "0",
        "queryThreadPoolQueueCapacity": str(config.get_int("queryThreadPoolQueueCapacity")),
        "EndTransactionQueueSize": "0",
        "EndTransactionThreadPoolQueueCapacity": str(config.get_int("endTransactionPoolQueueCapacity")),
        "dispatchBehindBytes": str(max(store.reput.behind(), 0)),
        "pageCacheLockTimeMills": str(commitlog.lock_time_ms()),
        "sendThreadPoolQueueHeadWaitTimeMills": str(send.head_wait_ms() if send else 0),
        "pullThreadPoolQueueHeadWaitTimeMills": str(pull.head_wait_ms() if pull else 0),
        "queryThreadPoolQueueHeadWaitTimeMills": "0",
        "earliestMessageTimeStamp": "-1",
        "startAcceptSendRequestTimeStamp": str(config.get_int("startAcceptSendRequestTimeStamp")),
        "remainTransientStoreBufferNumbs": str(store.remain_transient_buffers()),
        "remainHowManyDataToFlush": human_bytes(max(commitlog.max_offset() - commitlog.queue.flushed_where, 0)),
        "commitLogDirCapacity": capacity,
    }
    if ctx.profile.is_5x:  # 5.x: `isSpecialServiceRunning`, true on a master (what clusterList's #ACTIVATED shows)
        t["brokerActive"] = "false" if config.is_slave else "true"
    if store.pool is not None:
        t["remainHowManyDataToCommit"] = human_bytes(max(commitlog.queue.max_wrote_offset()
                                                         - commitlog.queue.committed_where, 0))
    ha = store.ha
    if ha.client is not None:
        t["haClientConnected"] = "true" if ha.client.is_connected else "false"
        t["haMasterAddress"] = ha.client.master_address or ""
    else:
        t["haConnectionCount"] = str(ha.connection_count)
        t["haPush2SlaveMaxOffset"] = str(ha.push2slave_max_offset)
        t["haSlaveAckOffset"] = str(ha.slave_ack_offset())
        t["haSlaveFallbehindBytes"] = str(max(commitlog.max_offset() - ha.push2slave_max_offset, 0)
                                          if ha.connection_count > 0 else -1)
        t["haConnectionZeroTimes"] = str(ha.zero_periods.count)
        t["haConnectionZeroLastMicros"] = str(ha.zero_periods.last_ns // 1000)
        t["haConnectionZeroMaxMicros"] = str(ha.zero_periods.max_ns // 1000)
    return java_ordered(t, RUNTIME_MAP_CAPACITY)
