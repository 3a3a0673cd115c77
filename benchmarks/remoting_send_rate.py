"""Sends per second from one process through one shared `Producer` (threads, or greenlets under gevent
monkey-patching) against a server in another process that acks every SEND_MESSAGE_V2 at once.

    .venv/bin/python benchmarks/remoting_send_rate.py --mode threads --workers 64 --seconds 10
    .venv/bin/python benchmarks/remoting_send_rate.py --mode gevent --workers 64 --seconds 10

The server (this script with --serve) is pinned to the last CPU and the client to the first, so the client's figure
is what one core does. Prints sends/s (wall) and sends per CPU-second of the client process."""
from __future__ import annotations

import sys

if "--gevent-client" in sys.argv:  # patch before anything else is imported, as Locust does
    from gevent import monkey

    monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remoting import codec  # noqa: E402
from remoting.codes import RequestCode  # noqa: E402
from remoting.command import make_response  # noqa: E402
from remoting.message import Message  # noqa: E402
from remoting.message_id import create_offset_msg_id  # noqa: E402
from remoting.producer import Producer  # noqa: E402
from remoting.route import BrokerData, QueueData, TopicRouteData  # noqa: E402

TOPIC = "BenchTopic"
BODY = b"x" * 128


def serve(port_file: str) -> None:
    """Name server and broker on one port: routes point here, every send is acked with SEND_OK at once."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    addr = f"127.0.0.1:{port}"
    route = TopicRouteData([QueueData("broker-a", 4, 4, 6)], [BrokerData("DefaultCluster", "broker-a", {0: addr})])
    msg_id = create_offset_msg_id(addr, 0)

    def handle(conn: socket.socket) -> None:
        reader = codec.FrameReader()
        offsets = [0, 0, 0, 0]
        while True:
            data = conn.recv(1 << 18)
            if not data:
                return
            out = []
            for cmd in reader.feed(data):
                if cmd.code == RequestCode.SEND_MESSAGE_V2:
                    qid = int(cmd.ext_fields["e"])
                    offsets[qid] += 1
                    out.append(codec.encode(make_response(cmd, 0, None, {
                        "msgId": msg_id, "queueId": qid, "queueOffset": offsets[qid],
                        "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})))
                elif cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
                    out.append(codec.encode(make_response(cmd, 0, None, None, route.to_json())))
                elif not cmd.is_oneway:
                    out.append(codec.encode(make_response(cmd, 0)))
            if out:
                conn.sendall(b"".join(out))

    Path(port_file).write_text(str(port))
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def run_client(addr: str, mode: str, workers: int, seconds: float) -> dict:
    producer = Producer(addr, "bench_group", heartbeat=False)
    producer.send(Message(TOPIC, BODY))  # route lookup and connect
    counts = [0] * workers
    errors = [0]
    stop = time.monotonic() + seconds
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()

    def work(i: int) -> None:
        n = 0
        while time.monotonic() < stop:
            try:
                producer.send(Message(TOPIC, BODY, keys=f"k{i}-{n}"))
                n += 1
            except Exception:  # noqa: BLE001 - counted, the figure says how many
                errors[0] += 1
        counts[i] = n

    if mode == "gevent":
        import gevent

        gevent.joinall([gevent.spawn(work, i) for i in range(workers)])
    else:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    wall = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    producer.close()
    total = sum(counts)
    return {"mode": mode, "workers": workers, "sends": total, "errors": errors[0], "wall_s": wall, "cpu_s": cpu,
            "sends_per_s": total / wall, "sends_per_cpu_s": total / cpu if cpu else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["threads", "gevent"], default="threads")
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    parser.add_argument("--client", metavar="ADDR", help=argparse.SUPPRESS)
    parser.add_argument("--gevent-client", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if args.serve:
        os.sched_setaffinity(0, {cpus[-1]})
        serve(args.serve)
        return 0
    if args.client:
        os.sched_setaffinity(0, {cpus[0]})
        print(json.dumps(run_client(args.client, args.mode, args.workers, args.seconds)))
        return 0

    from rich.console import Console
    from rich.table import Table

    console = Console()
    port_file = Path(f"/tmp/remoting_bench_{os.getpid()}.port")
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
    try:
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text()):
            if time.monotonic() > deadline or server.poll() is not None:
                console.print("[red]the ack server did not start[/red]")
                return 1
            time.sleep(0.05)
        addr = f"127.0.0.1:{port_file.read_text()}"
        cmd = [sys.executable, __file__, "--client", addr, "--mode", args.mode, "--workers", str(args.workers),
               "--seconds", str(args.seconds)] + (["--gevent-client"] if args.mode == "gevent" else [])
        with console.status(f"sending for {args.seconds:.0f}s from {args.workers} {args.mode} workers ..."):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 120)
        if done.returncode != 0:
            console.print(done.stderr)
            return 1
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.kill()
        server.wait()
        port_file.unlink(missing_ok=True)
    table = Table(title=f"remoting Producer.send, 128 B bodies, one client process ({args.mode})")
    for col in ("workers", "sends", "errors", "wall s", "client CPU s", "sends/s", "sends per CPU-second"):
        table.add_column(col, justify="right")
    table.add_row(str(result["workers"]), str(result["sends"]), str(result["errors"]), f"{result['wall_s']:.1f}",
                  f"{result['cpu_s']:.1f}", f"{result['sends_per_s']:,.0f}", f"{result['sends_per_cpu_s']:,.0f}")
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
