"""Microseconds per frame of the remoting codec on a send's frames: a SEND_MESSAGE_V2 request (13 header fields,
128 B body, a fresh timestamp and properties string each time, as a producer writes them) encoded with each header
type, and the broker's SEND_OK answer (JSON, as the real 4.9.1 answers whatever the request's type) decoded.

    .venv/bin/python benchmarks/remoting_codec.py [--frames 20000] [--repeats 5]

Prints the best of the repeats (the machine is shared; the best is the steadiest figure of the code's cost).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remoting import codec  # noqa: E402
from remoting.codes import SerializeType  # noqa: E402
from remoting.command import RemotingCommand, make_response  # noqa: E402

FIELDS = {"a": "bench_group", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "", "h": "0",
          "i": "", "j": "0", "k": "false", "m": "false", "n": "broker-a"}


def requests(n: int, serialize_type: SerializeType) -> list[RemotingCommand]:
    out = []
    for i in range(n):
        fields = dict(FIELDS, e=str(i % 4), g=str(1_795_000_000_000 + i),
                      i=f"KEYS\x01run:w0:{i}\x02UNIQ_KEY\x017F0000010000{i:016X}\x02WAIT\x01true")
        out.append(RemotingCommand(code=310, opaque=i, ext_fields=fields, body=b"x" * 128,
                                   serialize_type=serialize_type))
    return out


def best_us(fn, items: list, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, (time.perf_counter() - t) / len(items) * 1e6)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    table = Table(title=f"remoting codec, µs per frame (best of {args.repeats} x {args.frames:,} frames)")
    table.add_column("what")
    table.add_column("µs", justify="right")
    for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
        table.add_row(f"encode SEND_MESSAGE_V2, {stype.name} header",
                      f"{best_us(codec.encode, requests(args.frames, stype), args.repeats):.2f}")
    answers = [codec.encode(make_response(r, 0, None, {
        "queueId": r.ext_fields["e"], "TRACE_ON": "true", "MSG_REGION": "DefaultRegion",
        "msgId": f"7F00000100002A9F{r.opaque:016X}", "queueOffset": str(r.opaque)}))[4:]
        for r in requests(args.frames, SerializeType.JSON)]
    table.add_row("decode SEND_OK answer, JSON header", f"{best_us(codec.decode_frame, answers, args.repeats):.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
