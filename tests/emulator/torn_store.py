"""Commitlog files with torn records, as an ext4 error under a slave's replication writes leaves them: whole
records in the commitlog's own layout (`remoting.stored`), then one of them cut at a field boundary, zeroed from a
byte on, with a NUL in its topic, or with a flipped body byte. The torn-record tests and
`benchmarks/torn_records_vs_real.py` (the same stores on the real broker) share them."""
from __future__ import annotations

from pathlib import Path

from remoting.message import properties_to_string
from remoting.stored import encode_stored_message

FILE_SIZE = 64 * 1024
TOPIC = "TornTopic"
STORE_HOST = "127.0.0.1:10911"
PROPS = {"UNIQ_KEY": "7F0000010000", "KEYS": "k", "TAGS": "t", "WAIT": "true"}
BODY_POS = 4 * 5 + 8 * 2 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4
"""Where an IPv4 record's body begins."""


def record(i: int, offset: int, topic: str = TOPIC, magic: int | None = None) -> bytes:
    """The i-th record (queue i % 2, queue offset i // 2) at commitlog `offset`."""
    extra = {"magic_code": magic} if magic is not None else {}
    return bytes(encode_stored_message(topic=topic, queue_id=i % 2, body=b"body-%04d" % i + b"x" * 100,
                                       properties=dict(PROPS, KEYS=f"k{i}"), queue_offset=i // 2,
                                       commitlog_offset=offset, born_timestamp=1, born_host=("127.0.0.1", 5000),
                                       store_timestamp=2, store_host=STORE_HOST, **extra))


def records(n: int) -> tuple[bytearray, list[int]]:
    """n whole records from offset 0: the bytes and each record's start."""
    data, starts = bytearray(), []
    for i in range(n):
        starts.append(len(data))
        data += record(i, len(data))
    return data, starts


def properties_length(i: int = 3) -> int:
    return len(properties_to_string(dict(PROPS, KEYS=f"k{i}")).encode())


def field_boundaries(rec: bytes) -> list[int]:
    """Where each field of a (V1, IPv4) record ends: a cut at each leaves the record torn there."""
    ends, p = [], 0
    for width in (4, 4, 4, 4, 4, 8, 8, 4, 8, 8, 8, 8, 4, 8):
        p += width
        ends.append(p)
    body_len = int.from_bytes(rec[p:p + 4], "big")
    p += 4
    ends.append(p)
    p += body_len
    ends.append(p)
    topic_len = rec[p]
    p += 1 + topic_len
    ends += [p - topic_len, p]
    p += 2
    ends.append(p)
    return sorted(set(e for e in ends if 0 < e < len(rec)))


def write_commitlog(root: Path, data: bytes, start: int = 0) -> Path:
    """`data` as the commitlog file starting at `start` under `root/commitlog`, the rest of the file zeros."""
    commitlog = root / "commitlog"
    commitlog.mkdir(parents=True, exist_ok=True)
    path = commitlog / f"{start:020d}"
    path.write_bytes(bytes(data) + b"\0" * (FILE_SIZE - len(data)))
    return path


def cases() -> dict[str, tuple[bytes, int]]:
    """name -> (the first commitlog file's bytes, the recovery end the broker's rule gives) over five records whose
    fourth is torn: cut at each field boundary, zeroed from a byte on, a NUL in the topic that adds up, a flipped
    body byte."""
    data, starts = records(5)
    at, rec = starts[3], bytes(data[starts[3]:starts[4]])
    props_at = len(rec) - properties_length()
    out: dict[str, tuple[bytes, int]] = {"whole": (bytes(data), len(data))}
    for cut in field_boundaries(rec):
        out[f"cut-at-{cut}"] = (bytes(data[:at]) + rec[:cut], at if cut < props_at else starts[4])
    for zero_from in (8, 60, props_at - 5, props_at, len(rec) - 1):
        torn = bytearray(data[:starts[4]])
        torn[at + zero_from:] = b"\0" * (len(rec) - zero_from)
        out[f"zeros-from-{zero_from}"] = (bytes(torn), at if zero_from < props_at else starts[4])
    nul = record(3, at, topic="Torn\0opic")
    out["nul-in-topic"] = (bytes(data[:at]) + nul, at + len(nul))
    flipped = bytearray(data)
    flipped[at + BODY_POS] ^= 0xFF
    out["body-crc"] = (bytes(flipped), at)
    return out
