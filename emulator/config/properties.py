"""Java `.properties` files as `java.util.Properties.load` reads them, and written back as RocketMQ's
`MixAll.properties2String` writes them (`key=value` lines, values raw)."""
from __future__ import annotations

from pathlib import Path

from remoting import javaprops


def parse_properties(text: str) -> dict[str, str]:
    """Key/value pairs of a properties text as `Properties.load` reads it (`#`/`!` comments, `=`, `:` or blank
    separators, line continuations, `\\t`/`\\uXXXX` escapes; later keys win): the client's parser, one for both."""
    return javaprops.loads(text)


def format_properties(items: list[tuple[str, str]] | dict[str, str]) -> str:
    """`key=value\\n` for each pair, as `MixAll.properties2String` (the GET_BROKER_CONFIG body, the rewritten -c file)."""
    pairs = items.items() if isinstance(items, dict) else items
    return "".join(f"{k}={v}\n" for k, v in pairs)


def load_properties_file(path: str | Path) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))
