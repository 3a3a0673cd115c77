"""Broker configuration bodies: `MixAll.properties2String` (`key=value\\n` per entry, in the iteration order of a
JDK 9+ `Properties`) and `MixAll.string2Properties` (`Properties.load`: comments, `=`/`:`/blank separators,
backslash escapes and line continuations)."""
from __future__ import annotations

from remoting.hashmap import java_properties_order

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def dumps(properties: dict[str, object]) -> str:
    """`MixAll.properties2String`: None values skipped, no escaping (as the broker writes it)."""
    return "".join(f"{k}={properties[k]}\n" for k in java_properties_order(properties) if properties[k] is not None)


def _logical_lines(text: str):
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if not pending else raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def loads(text: str | bytes) -> dict[str, str]:
    """`Properties.load` of a config body (decoded as UTF-8)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8")
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key = line[:i]
        j = i
        while j < n and line[j] in " \t\f":
            j += 1
        if j < n and line[j] in "=:":
            j += 1
            while j < n and line[j] in " \t\f":
                j += 1
        out[_unescape(key)] = _unescape(line[j:])
    return out
