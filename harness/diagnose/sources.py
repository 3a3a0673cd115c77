"""The files `rmq-chaos diagnose` reads: paths walked into regular files, each streamed in blocks of whole lines.

A path may be a file or a directory (walked recursively, in name order, symlinks not followed); a `.gz` file is
decompressed as it is read. Nothing is read whole: a file comes as blocks of about BLOCK_BYTES that end at a line
end (the partial last line carried to the next block), so a 1 GiB log costs one block of memory. What cannot be read
is not an error of the run: it becomes one `Skipped` line naming the file and why (binary, unreadable, truncated gzip,
not a regular file), and the rest is still diagnosed.
"""
from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK_BYTES = 8 * 1024 * 1024
SNIFF_BYTES = 8192
MAX_LINE_BYTES = 4 * BLOCK_BYTES
GZIP_WBITS = 16 + zlib.MAX_WBITS
ALLOWED = "text logs (broker, store, client, application), jstack dumps, broker.conf; plain or .gz"


@dataclass(frozen=True)
class Skipped:
    """A file (or path) not read, or not read to its end, and why."""

    path: str
    reason: str

    def line(self) -> str:
        return f"diagnose: {self.path}: skipped: {self.reason}; allowed: {ALLOWED}"


class SkipFile(Exception):
    """Raised inside a read: the file is given up from here on (what was read before still counts)."""


def walk(paths: list[str], skipped: list[Skipped]) -> Iterator[Path]:
    """Every regular file under `paths` (a file itself, or a directory walked in name order)."""
    for raw in paths:
        path = Path(raw)
        try:
            info = path.stat()  # a path given by name is followed if it is a link; links inside directories are not
        except OSError as err:
            skipped.append(Skipped(raw, f"cannot be read ({err.strerror or err})"))
            continue
        if stat.S_ISDIR(info.st_mode):
            yield from _walk_dir(path, skipped)
        elif stat.S_ISREG(info.st_mode):
            yield path
        else:
            skipped.append(Skipped(raw, "not a regular file or directory"))


def _walk_dir(top: Path, skipped: list[Skipped]) -> Iterator[Path]:
    def on_error(err: OSError) -> None:
        skipped.append(Skipped(str(err.filename or top), f"cannot be read ({err.strerror or err})"))

    for root, dirs, files in os.walk(top, onerror=on_error):
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            try:
                mode = path.lstat().st_mode
            except OSError as err:
                skipped.append(Skipped(str(path), f"cannot be read ({err.strerror or err})"))
                continue
            if stat.S_ISREG(mode):
                yield path
            else:
                skipped.append(Skipped(str(path), "a symbolic link (not followed inside a directory)"
                                       if stat.S_ISLNK(mode) else "not a regular file"))


def blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes (decompressed for `.gz`) as blocks that end at a line end; raises SkipFile (binary,
    unreadable, truncated or corrupt gzip) at the point where reading stops, after yielding what came before."""
    try:
        raw = open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise SkipFile(f"cannot be read ({err.strerror or err})") from None
    with raw:
        chunks = _gunzip(raw) if path.name.endswith(".gz") else iter(lambda: raw.read(BLOCK_BYTES), b"")
        carry = b""
        first = True
        while True:
            try:
                chunk = next(chunks, b"")
            except OSError as err:
                raise SkipFile(f"cannot be read ({err.strerror or err})") from None
            except SkipFile:
                if carry:
                    yield carry + b"\n"
                raise
            if first:
                first = False
                if b"\0" in chunk[:SNIFF_BYTES]:
                    raise SkipFile("binary file (NUL bytes in its first 8 KiB)")
            if not chunk:
                if carry:
                    yield carry
                return
            data = carry + chunk
            end = data.rfind(b"\n") + 1
            if end == 0:
                carry = b"" if len(data) >= MAX_LINE_BYTES else data
                if not carry:
                    yield data  # a line longer than MAX_LINE_BYTES is cut, never held whole
                continue
            carry = data[end:]
            yield data[:end]


def _gunzip(raw: BinaryIO) -> Iterator[bytes]:
    """A gzip stream's decompressed bytes (every member), chunk by chunk; SkipFile when it ends early or is not
    gzip, after every byte before that point was given out."""
    inflate = zlib.decompressobj(GZIP_WBITS)
    while True:
        packed = raw.read(BLOCK_BYTES // 4)
        if not packed:
            if not inflate.eof:
                raise SkipFile("truncated gzip (the stream ends before its end marker); the part before was read")
            return
        while packed:
            try:
                out = inflate.decompress(packed, BLOCK_BYTES)
            except zlib.error as err:
                raise SkipFile(f"corrupt gzip ({err}); the part before was read") from None
            if out:
                yield out
            packed = inflate.unconsumed_tail
            if inflate.eof:
                packed = inflate.unused_data + packed
                if not packed.strip(b"\0"):
                    return
                inflate = zlib.decompressobj(GZIP_WBITS)
