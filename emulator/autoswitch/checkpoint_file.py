"""`CheckpointFile` and `MixAll.string2File` of rocketmq-all-5.3.0, as the epoch file uses them: how the file is
written and read decides whether a broker starts again after its store went read-only.

Writing (`string2File`): the current content is copied over `<file>.bak` in place, then the new content written over
the file in place (truncate and write, no fsync, no rename). Reading (`CheckpointFile.read`): a missing file is no
entries; the entry count and the CRC32 lines are parsed with `Integer.parseInt`, so an empty file (no first line) or
a line that is not a number throws `NumberFormatException`, which is not an `IOException`: it is not caught, the
broker's start fails and `BrokerStartup` exits with -1 (255). A count or CRC that does not match the entries is an
`IOException`: the `.bak` copy is read instead, and if that fails too with an `IOException` the broker starts with
no epochs (`EpochFileCache.initCacheFromFile` logs it and returns false). An empty result also falls back to `.bak`.

Measured on the real 5.3.0 (docs/fidelity.md, slave-readonly-controller): a slave whose store turned read-only 16 s
after it wrote its first epoch file left that file empty on disk (ext4 had not yet allocated the delayed data when
the error aborted the journal), and after the fault's revert it exited with `java.lang.NumberFormatException: Cannot
parse null string` at `CheckpointFile.read`."""
from __future__ import annotations

import os
import zlib

NOT_CHECK_CRC_MAGIC_CODE = 0


class JavaStartFailure(Exception):
    """An exception Java would not catch before `BrokerStartup`: the broker prints it and exits with 255."""

    def __init__(self, java_class: str, message: str, frames: tuple[str, ...]) -> None:
        super().__init__(f"{java_class}: {message}")
        self.frames = frames

    def stack_trace(self) -> str:
        return "\n".join([str(self), *(f"\tat {f}" for f in self.frames)])


READ_FRAMES = ("org.apache.rocketmq.common.utils.CheckpointFile.read(CheckpointFile.java:107)",
               "org.apache.rocketmq.common.utils.CheckpointFile.read(CheckpointFile.java:146)",
               "org.apache.rocketmq.store.ha.autoswitch.EpochFileCache.initCacheFromFile(EpochFileCache.java:59)",
               "org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAService.init(AutoSwitchHAService.java:84)")


def java_crc32(data: bytes) -> int:
    """`UtilAll.crc32`: CRC32 & 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


def _parse_int(text: str | None, bits: int = 32) -> int:
    """`Integer.parseInt` (`Long.parseLong` with bits=64), with Java's messages."""
    if text is None:
        raise JavaStartFailure("java.lang.NumberFormatException", "Cannot parse null string", READ_FRAMES)
    try:
        value = int(text, 10) if text and text.strip() == text and "_" not in text else None
    except ValueError:
        value = None
    if value is None or not -2**(bits - 1) <= value < 2**(bits - 1):
        raise JavaStartFailure("java.lang.NumberFormatException", f'For input string: "{text}"', READ_FRAMES)
    return value


def _read_one(path: str) -> list[tuple[int, int]]:
    """`CheckpointFile.read(String)`: the (epoch, start offset) lines; OSError stands for Java's IOException."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    expected = _parse_int(lines[0] if lines else None)
    crc = _parse_int(lines[1] if len(lines) > 1 else None)
    body = lines[2:]
    entries = []
    for line in body:
        parts = line.split("-")
        if len(parts) == 2:
            entries.append((_parse_int(parts[0]), _parse_int(parts[1], 64)))
    if len(entries) != expected:
        raise OSError(f"Expect {expected} entries, only found {len(entries)} entries")
    truth = java_crc32("".join(line + "\n" for line in body).encode())
    if crc != NOT_CHECK_CRC_MAGIC_CODE and truth != crc:
        raise OSError(f"Entries crc32 not match, file={crc}, truth={truth}")
    return entries


def read(path: str) -> list[tuple[int, int]]:
    """`CheckpointFile.read()`: the file, else its `.bak`; an OSError of the `.bak` propagates (the caller logs it
    and starts with no epochs); a JavaStartFailure propagates from either (the broker exits)."""
    try:
        result = _read_one(path)
    except OSError:
        result = []
    return result or _read_one(path + ".bak")


def write(path: str, entries: list[tuple[int, int]]) -> None:
    """`CheckpointFile.write` through `MixAll.string2File`: the old content over `.bak`, the new over the file, each
    written in place without fsync. OSError (a read-only store) propagates."""
    if not entries:
        return
    lines = "".join(f"{epoch}-{start}\n" for epoch, start in entries)
    content = f"{len(entries)}\n{java_crc32(lines.encode())}\n{lines}"
    if os.path.exists(path):
        with open(path, "rb") as f:
            previous = f.read()
        with open(path + ".bak", "wb") as f:
            f.write(previous)
    with open(path, "w", encoding="utf-8") as f:
        f.write(content)
