"""Failover figures of 5.x controller mode, real Apache RocketMQ or the emulator, same configuration files and load,
in a network namespace of our own (only loopback): figures only, no assertion. Needs root.

    sudo .venv/bin/python benchmarks/controller_failover.py --program apache --rocketmq-home /work/rmq-dist/rocketmq-5.3.0
        [--controllers 0|3] [--brokers 2|3] [--scenario kill|shrink|unclean|leader] [--body 128] [--rounds 1]
    sudo .venv/bin/python benchmarks/controller_failover.py --program emulator ...

The load: 4 threads sending through one `remoting.Producer` (java-5.3 profile) to a 4-queue topic, plus a probe
sending SEND_MESSAGE_V2 straight to every broker's address every 20 ms (the broker's own readiness, free of the
producers' 30 s route refresh). Scenarios, t = 0 at the fault:
- kill: SIGKILL of the master. fin_s (a connection to the master reads EOF: the kernel closed its sockets),
  log_*_s (the first log line after t0 of: the controller's "Channel ... inactive", "Elect new master", the new
  master's "Begin to change to master" and "Change broker ... to SYNC_MASTER", logged after it re-registered), on
  Apache the classes the controller's and the new master's JVMs loaded meanwhile (`-Xlog:class+load`), elect_s (the controller's SyncStateSet names another master), route_s (the name
  server's brokerId 0), role_s (the new master's GET_BROKER_HA_STATUS says master), probe_ok_s (its first SEND_OK
  to the probe), producer_ok_s (the producers' first SEND_OK) and the producers' outcomes until then.
- shrink: `minInSyncReplicas=2`; SIGSTOP of a slave: shrink_s (the set loses it), refused_s (first send refused
  "in-sync replicas not enough"), then SIGCONT at shrink + 2 s: expand_s.
- unclean: `enableElectUncleanMaster=true`; SIGSTOP of the slave until the set lost it, SIGKILL of the master, SIGCONT
  of the slave: elect_s of the out-of-sync slave.
- leader (3 controllers): SIGKILL of the controller leader: leader_s (another controller names a new leader).
"""
from __future__ import annotations

import argparse
import calendar
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from controller_nodes import Cluster
from support import not_root

from remoting.client import RemotingClient
from remoting.command import make_request
from remoting.controller_admin import ControllerAdmin
from remoting.errors import RemotingError
from remoting.headers import SendMessageRequestHeaderV2
from remoting.message import Message
from remoting.namesrv import NameServerClient
from remoting.outcome import outcome_of
from remoting.producer import Producer

TOPIC = "FailoverTopic"
POLL_S = 0.02
WATCH_S = 45.0
NETNS_ENV = "RMQ_FAILOVER_IN_NETNS"


class Probe:
    """Polls the controller, the name server and the brokers; every answer timed from `t0`."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.client = RemotingClient()
        self.ctrl = ControllerAdmin(self.client)
        self.ns = NameServerClient(RemotingClient(cluster.namesrv_addr))

    def sync_state(self):
        for addr in self.cluster.controller_addrs:
            try:
                return self.ctrl.get_sync_state_data(addr, ["broker-a"]).get("broker-a")
            except RemotingError:
                continue
        return None

    def leader(self, skip: str | None = None) -> str | None:
        for addr in self.cluster.controller_addrs:
            if addr == skip:
                continue
            try:
                return self.ctrl.get_controller_metadata(addr, 500).leader_address
            except RemotingError:
                continue
        return None

    def route_master(self) -> str | None:
        try:
            route = self.ns.get_route(TOPIC)
        except RemotingError:
            return None
        return route.broker_datas[0].broker_addrs.get(0) if route.broker_datas else None

    def is_master(self, addr: str) -> bool:
        try:
            return bool(self.ctrl.get_broker_ha_status(addr, 500).get("master"))
        except RemotingError:
            return False

    def direct_send(self, addr: str) -> int | None:
        fields = SendMessageRequestHeaderV2(a="probe_group", b=TOPIC, c="TBW102", d=4, e=0, f=0,
                                            g=int(time.time() * 1000), h=0, i="", j=0).to_fields()
        try:
            return self.client.invoke_sync(addr, make_request(310, fields, b"probe", version=473), 1000).code
        except RemotingError:
            return None


def load(producer: Producer, body: int, stop: threading.Event, out: list) -> None:
    while not stop.is_set():
        begin = time.time()
        try:
            producer.send(Message(TOPIC, random.randbytes(body)))
            out.append((begin, time.time(), "SEND_OK", None))
        except RemotingError as e:
            word, code, remark = outcome_of(e)
            out.append((begin, time.time(), word if code is None else f"{word}({code})", remark))
            time.sleep(0.02)


def first(predicate, t0: float, until: float = WATCH_S):
    """Seconds from t0 until `predicate()` holds (polled every 20 ms), None if not within `until`."""
    while time.time() - t0 < until:
        if predicate():
            return round(time.time() - t0, 3)
        time.sleep(POLL_S)
    return None


def run_round(args, workdir: Path) -> dict:
    broker_conf = {"minInSyncReplicas": "2"} if args.scenario == "shrink" else {}
    ctrl_conf = {"enableElectUncleanMaster": "true"} if args.scenario == "unclean" else {}
    cluster = Cluster(args.program, workdir, Path(args.rocketmq_home) if args.rocketmq_home else None,
                      args.controllers, args.brokers, broker_conf, ctrl_conf)
    stop, out, figures = threading.Event(), [], {"program": args.program, "scenario": args.scenario,
                                                 "controllers": args.controllers or "embedded",
                                                 "brokers": args.brokers, "body": args.body}
    try:
        cluster.start()
        probe = Probe(cluster)
        info = None
        first(lambda: (i := probe.sync_state()) is not None and len(i.sync_state_set) == args.brokers, time.time(), 90)
        info = probe.sync_state()
        master = next(n for n in cluster.nodes if cluster.nodes[n].kind == "broker"
                      and cluster.broker_addr(n) == info.master_address)
        slaves = [n for n in cluster.nodes if cluster.nodes[n].kind == "broker" and n != master]
        admin = probe.ctrl
        for name in (master, *slaves):
            admin.invoke(cluster.broker_addr(name), 17, {"topic": TOPIC, "defaultTopic": "TBW102",
                                                         "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
                                                         "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
                                                         "order": "false"})
        first(lambda: probe.route_master() == info.master_address, time.time(), 60)
        producer = Producer(cluster.namesrv_addr, "failover_group", "java-5.3")
        threads = [threading.Thread(target=load, args=(producer, args.body, stop, out), daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(8)
        figures.update(SCENARIOS[args.scenario](cluster, probe, master, slaves, out))
        stop.set()
        for t in threads:
            t.join(10)
        producer.close()
    finally:
        stop.set()
        cluster.stop()
    return figures


def fin_watch(addr: str, t0_box: list) -> list:
    """A connection to `addr` and a thread that notes when it reads EOF (the killed process's sockets closed)."""
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    seen: list = []

    def wait() -> None:
        try:
            while sock.recv(4096):
                pass
        except OSError:
            pass
        seen.append(round(time.time() - t0_box[0], 3))
        sock.close()

    threading.Thread(target=wait, daemon=True).start()
    return seen


def kill_master(cluster: Cluster, probe: Probe, master: str, slaves: list[str], out: list) -> dict:
    t0_box = [0.0]
    fin = fin_watch(cluster.broker_addr(master), t0_box)
    t0 = t0_box[0] = time.time()
    cluster.signal(master, signal.SIGKILL)
    cluster.nodes[master].proc.wait(10)
    addrs = [cluster.broker_addr(s) for s in slaves]
    elect = first(lambda: (i := probe.sync_state()) is not None and i.master_address in addrs, t0)
    new = probe.sync_state().master_address if elect is not None else None
    route = first(lambda: probe.route_master() == new, t0) if new else None
    role = first(lambda: probe.is_master(new), t0) if new else None
    probe_ok = first(lambda: probe.direct_send(new) == 0, t0) if new else None
    first_ok = first(lambda: any(b >= t0 and o == "SEND_OK" for b, _, o, _ in out), t0)
    first_end = min((e for b, e, o, _ in out if b >= t0 and o == "SEND_OK"), default=None)
    producer_ok = round(first_end - t0, 3) if first_ok is not None and first_end is not None else None
    window = Counter(o for b, e, o, _ in out if b >= t0 and (first_end is None or e < first_end))
    new_name = next((s for s in slaves if cluster.broker_addr(s) == new), None)
    time.sleep(1)  # let the logs be written
    logs = log_breakdown(cluster, t0, new_name)
    classes = {}
    if cluster.program == "apache" and logs["log_elect_s"] is not None and new_name:
        ctrl = "namesrv" if not cluster.controllers else f"controller-{cluster.controller_addrs.index(probe.leader())}"
        classes = {"classes_loaded_controller_until_elect": cluster.classes_loaded(ctrl, t0, t0 + logs["log_elect_s"]),
                   "classes_loaded_new_master_until_changed": cluster.classes_loaded(
                       new_name, t0, t0 + (logs["log_changed_master_s"] or role or 0))}
    return {"fin_s": fin[0] if fin else None, **logs, **classes, "elect_s": elect, "route_s": route, "role_s": role, "probe_ok_s": probe_ok,
            "producer_ok_s": producer_ok, "window": dict(window)}


def shrink(cluster: Cluster, probe: Probe, master: str, slaves: list[str], out: list) -> dict:
    t0 = time.time()
    cluster.signal(slaves[0], signal.SIGSTOP)
    master_id = probe.sync_state().master_broker_id
    shrunk = first(lambda: (i := probe.sync_state()) is not None and i.sync_state_set == {master_id}, t0)
    refused = first(lambda: any(r and "in-sync replicas not enough" in r for _, _, _, r in out), t0, 60)
    before = Counter(o for b, e, o, _ in out if b >= t0 and (shrunk is None or e < t0 + shrunk))
    time.sleep(2)
    t1 = time.time()
    cluster.signal(slaves[0], signal.SIGCONT)
    expand = first(lambda: (i := probe.sync_state()) is not None and len(i.sync_state_set) == 2, t1)
    return {"shrink_s": shrunk, "refused_s": refused, "expand_after_thaw_s": expand, "until_shrink": dict(before)}


def unclean(cluster: Cluster, probe: Probe, master: str, slaves: list[str], out: list) -> dict:
    res = {"shrink_s": None}
    t0 = time.time()
    cluster.signal(slaves[0], signal.SIGSTOP)
    master_id = probe.sync_state().master_broker_id
    res["shrink_s"] = first(lambda: (i := probe.sync_state()) is not None and i.sync_state_set == {master_id}, t0)
    t1 = time.time()
    cluster.signal(master, signal.SIGKILL)
    cluster.signal(slaves[0], signal.SIGCONT)
    addr = cluster.broker_addr(slaves[0])
    res["elect_s"] = first(lambda: (i := probe.sync_state()) is not None and i.master_address == addr, t1)
    return res


def kill_leader(cluster: Cluster, probe: Probe, master: str, slaves: list[str], out: list) -> dict:
    old = probe.leader()
    name = f"controller-{cluster.controller_addrs.index(old)}"
    t0 = time.time()
    cluster.signal(name, signal.SIGKILL)
    leader = first(lambda: probe.leader(skip=old) not in (None, old), t0)
    return {"leader_s": leader, "errors_after": dict(Counter(o for b, _, o, _ in out if b >= t0))}


LOG_MARKS = {
    "log_channel_inactive_s": ("controller", "inactive, broker"),
    "log_elect_s": ("controller", "Elect new master"),
    "log_begin_master_s": ("new", "Begin to change to master"),
    "log_changed_master_s": ("new", "to SYNC_MASTER, newMasterBrokerId"),
}


def log_line_time(line: str, program: str) -> float | None:
    """Epoch seconds of a `yyyy-MM-dd HH:mm:ss.SSS` log line (Apache logs in GMT+8, the emulator in local time)."""
    try:
        stamp = time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")
        millis = int(line[20:23]) / 1000
    except ValueError:
        return None
    if program == "apache":
        return calendar.timegm(stamp) - 8 * 3600 + millis
    return time.mktime(stamp) + millis


def log_breakdown(cluster: Cluster, t0: float, new_master: str | None) -> dict:
    """Seconds from t0 to the first log line after t0 of each mark (controller and new master's logs)."""
    controller = cluster.nodes["namesrv"].log("namesrv.log") + "".join(
        n.log("controller.log") for n in cluster.nodes.values() if n.kind == "controller")
    new = cluster.nodes[new_master].log("broker.log") if new_master else ""
    out = {}
    for key, (where, text) in LOG_MARKS.items():
        times = [t for line in (controller if where == "controller" else new).splitlines() if text in line
                 and (t := log_line_time(line, cluster.program)) is not None and t >= t0 - 0.001]
        out[key] = round(min(times) - t0, 3) if times else None
    return out


SCENARIOS = {"kill": kill_master, "shrink": shrink, "unclean": unclean, "leader": kill_leader}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", choices=("apache", "emulator"), required=True)
    parser.add_argument("--rocketmq-home")
    parser.add_argument("--controllers", type=int, choices=(0, 3), default=0)
    parser.add_argument("--brokers", type=int, choices=(2, 3), default=2)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="kill")
    parser.add_argument("--body", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", help="append one JSON line per round here")
    parser.add_argument("--keep", action="store_true", help="keep each round's directory (logs, stores)")
    args = parser.parse_args()
    if not_root("controller_failover", "a network namespace"):
        return 2
    if os.environ.get(NETNS_ENV) != "1":  # re-run ourselves in a namespace with only loopback
        env = dict(os.environ, **{NETNS_ENV: "1"})
        return subprocess.call(["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
                                sys.executable, *sys.argv], env=env)
    for _ in range(args.rounds):
        workdir = Path(tempfile.mkdtemp(prefix=f"failover-{args.program}-"))
        try:
            figures = run_round(args, workdir)
        finally:
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
        line = json.dumps(figures)
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
