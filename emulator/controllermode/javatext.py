"""Java's `toString` layouts the controller and broker logs print (`Name{a=1, b='x'}`, `[1, 2]`, `null`, `true`), so
the emulator's log lines read like a real 5.3.0's and the same greps find them."""
from __future__ import annotations

from collections.abc import Iterable


def java_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def java_set(values: Iterable[int] | None) -> str:
    """A `HashSet<Long>` of small ids prints in ascending order."""
    if values is None:
        return "null"
    return "[" + ", ".join(str(v) for v in sorted(values)) + "]"


def java_text(name: str, *fields: tuple[str, object]) -> str:
    """`Name{k=v, k=v}`; values already quoted by the caller where Java quotes them."""
    return name + "{" + ", ".join(f"{k}={java_value(v)}" for k, v in fields) + "}"


def java_identity(class_name: str, obj: object) -> str:
    """`Object.toString` of a class without its own: `pkg.Name@<identity hash, hex>` (5.3.0's RoleChangeNotifyEntry
    has none, so ControllerManager's notify line names no broker)."""
    return f"{class_name}@{id(obj) & 0x7FFFFFFF:x}"


def remoting_command_text(code: int, version: int, opaque: int, remark: str | None = None) -> str:
    """`RemotingCommand.toString` of a response the controller built in process (`createResponseCommandWithHeader`:
    flag 1, its header not yet encoded into extFields)."""
    return (f"RemotingCommand [code={code}, language=JAVA, version={version}, opaque={opaque}, flag(B)=1, "
            f"remark={java_value(remark)}, extFields=null, serializeTypeCurrentRPC=JSON]")
