"""Broker configuration bodies: `MixAll.properties2String` (`key=value\\n` per entry, in the iteration order of a
JDK 9+ `Properties`) and `MixAll.string2Properties` (`Properties.load`: comments, `=`/`:`/blank separators,
backslash escapes and line continuations); and `store_line`, one entry escaped as `Properties.store` writes it to
a stream (what a conf file read with `Properties.load(InputStream)` takes back exactly)."""
from __future__ import annotations

from remoting.hashmap import java_properties_order

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


_STORE_SPECIAL = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "=": "\\=", ":": "\\:",
                  "#": "\\#", "!": "\\!"}


def _store_escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in _SEPARATORS and not is_key:
            out.append(ch)  # after the key's separator these are plain text: left as written (host:port stays)
        elif ch in _STORE_SPECIAL:
            out.append(_STORE_SPECIAL[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.extend(f"\\u{unit:04X}" for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


_SEPARATORS = "=:#!"


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def store_line(key: str, value: str) -> str:
    """`key=value\\n` escaped as `Properties.store(OutputStream, ...)` escapes it (backslash escapes for \\, tab,
    newline, carriage return, form feed, a leading blank, every blank and = : # ! of a key, \\uXXXX for anything
    outside printable ASCII), except that = : # ! in a value stay as written: `Properties.load` takes them
    literally there, and a file a person reads keeps `namesrvAddr=127.0.0.1:9876`."""
    return f"{_store_escape(key, True)}={_store_escape(value, False)}\n"


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
    text = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in text):  # \uXXXX pairs are UTF-16: join them as Java's String does
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


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
