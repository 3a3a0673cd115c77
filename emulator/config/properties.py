"""Java `.properties` files as `java.util.Properties.load` reads them, and written back as RocketMQ's
`MixAll.properties2String` writes them (`key=value` lines, values raw)."""
from __future__ import annotations

from pathlib import Path

_SEPARATORS = "=: \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Key/value pairs of a properties text: `#`/`!` comments, `=`, `:` or blank separators, backslash line
    continuations and escapes (`\\t`, `\\n`, `\\uXXXX`). Later keys win, as in `Properties.load`."""
    out: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split(logical)
        out[_unescape(key)] = _unescape(value)
    return out


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if not pending else raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _split(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in _SEPARATORS:
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u" and i + 6 <= n:
            try:
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def format_properties(items: list[tuple[str, str]] | dict[str, str]) -> str:
    """`key=value\\n` for each pair, as `MixAll.properties2String` (the GET_BROKER_CONFIG body, the rewritten -c file)."""
    pairs = items.items() if isinstance(items, dict) else items
    return "".join(f"{k}={v}\n" for k, v in pairs)


def load_properties_file(path: str | Path) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))
