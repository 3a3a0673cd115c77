"""JSON as fastjson writes it. Route data carries maps with Long keys written bare (`{0:"127.0.0.1:10911"}`), and
ConsumeStats a map keyed by `MessageQueue` objects (`{{"brokerName":"b","queueId":1,"topic":"T"}:{...}}`), both of
which `json.loads` refuses: `loads` quotes such keys first (an object or array key comes back as its JSON text, to
be parsed again by the caller); `dumps` writes integer keys bare, as the broker and name server do
(ROCKETMQ-FACTS 0.8)."""
from __future__ import annotations

import json
from typing import Any

_WS = " \t\r\n"


def loads(text: str | bytes) -> Any:
    """Parse fastjson output; bare object keys (numbers, identifiers) come back as strings, object and array keys as
    their JSON text (`loads(key)` reads one)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_quote_bare_keys(text))


def _quote_bare_keys(text: str) -> str:
    out: list[str] = []
    stack: list[str] = []  # '{' or '['
    expect_key = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = _string_end(text, i)
            out.append(text[i : j + 1])
            i = j + 1
            expect_key = False
            continue
        if expect_key and ch in "{[":  # an object used as a map key (fastjson writes the key's JSON)
            j = _closing(text, i)
            out.append(json.dumps(text[i : j + 1]))
            i = j + 1
            expect_key = False
            continue
        if ch in "{[":
            stack.append(ch)
            expect_key = ch == "{"
        elif ch in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif ch == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        elif ch in _WS:
            pass
        elif expect_key:
            j = i
            while j < n and text[j] not in ":" + _WS:
                j += 1
            out.append(json.dumps(text[i:j]))
            i = j
            expect_key = False
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """The index of the quote closing the string that opens at `i` (the last index when it never closes)."""
    j, n = i + 1, len(text)
    while j < n and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return min(j, n - 1)


def _closing(text: str, i: int) -> int:
    """The index of the bracket closing the object or array that opens at `i` (the last index when it never closes)."""
    depth, j, n = 0, i, len(text)
    while j < n:
        ch = text[j]
        if ch == '"':
            j = _string_end(text, j)
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return n - 1


def dumps(obj: Any) -> str:
    """Compact JSON with integer map keys written bare, non-ASCII text as UTF-8, like `JSON.toJSONString`."""
    if isinstance(obj, dict):
        parts = []
        for key, value in obj.items():
            k = str(key) if isinstance(key, int) and not isinstance(key, bool) else json.dumps(str(key), ensure_ascii=False)
            parts.append(f"{k}:{dumps(value)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(obj, list | tuple):
        return "[" + ",".join(dumps(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)
