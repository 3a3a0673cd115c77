"""Building blocks of the scenario schema: a strict pydantic base, duration/size/name field types, and the
translation of pydantic's errors into one-line `<file>:<line>: <key path>: <problem>; allowed: <values>` messages.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from harness.scenario.reader import Marks, SourceError, shorten
from harness.scenario.units import format_duration, format_size, parse_duration, parse_size

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
RUN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.=-]{0,179}$"
NAME_ALLOWED = "letters, digits, '_', '.', '-' (starting with a letter or digit, at most 100)"

TYPE_WORDS = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false",
    "string_type": "a string", "list_type": "a list", "dict_type": "a mapping of keys to values",
    "model_type": "a mapping of keys to values", "model_attributes_type": "a mapping of keys to values",
}


def _duration(v: Any) -> float:
    return parse_duration(v)


def _size(v: Any) -> int:
    return parse_size(v)


Duration = Annotated[float, BeforeValidator(_duration), PlainSerializer(format_duration, return_type=str)]
"""Seconds, written as `30s`, `2m`, `1h`, `500ms`."""
Size = Annotated[int, BeforeValidator(_size), PlainSerializer(format_size, return_type=str)]
"""Bytes, written as `64MiB`, `2GiB`, `128B`."""
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
"""A name in the scenario (cluster, broker, client, phase, fault id): letters, digits, `_.-`, at most 100."""
RunName = Annotated[str, Field(pattern=RUN_NAME_PATTERN)]
"""A scenario's name, which names its runs (a matrix adds `.<axis>=<value>`), at most 180."""


class Strict(BaseModel):
    """Base of every scenario section: unknown keys are refused with the list of allowed keys."""

    model_config = ConfigDict(extra="forbid", validate_default=True, strict=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = list(cls.model_fields)
            for key in data:
                if key not in allowed:
                    raise PydanticCustomError(
                        "unknown_key", "unknown key {key!r}; allowed: {allowed}",
                        {"key": key, "allowed": ", ".join(allowed)})
        return data


def at(path: Sequence[str | int], problem: str) -> PydanticCustomError:
    """An error raised by a validator about a key below the model being validated (`path` relative to it)."""
    return PydanticCustomError("at_path", "{problem}", {"path": list(path), "problem": problem})


def first_error(err: ValidationError, marks: Marks, prefix: Sequence[str | int] = ()) -> SourceError:
    """The first error of a pydantic validation as a `SourceError` placed at its line."""
    e = err.errors(include_url=False)[0]
    loc: tuple[str | int, ...] = tuple(prefix) + tuple(p for p in e["loc"] if not _is_union_tag(p))
    ctx = e.get("ctx") or {}
    kind = e["type"]
    if kind == "unknown_key":
        loc = loc + (ctx["key"],)
    if kind == "at_path":
        loc = loc + tuple(ctx["path"])
    return marks.error(loc, problem_text(e))


def problem_text(e: dict[str, Any]) -> str:
    kind, ctx, got = e["type"], e.get("ctx") or {}, e.get("input")
    if kind == "unknown_key":
        return f"unknown key {ctx['key']!r}; allowed: {ctx['allowed']}"
    if kind == "at_path":
        return ctx["problem"]
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        return f"{got!r} is not allowed; allowed: {_expected_words(ctx.get('expected', ''))}"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind in TYPE_WORDS:
        return f"expected {TYPE_WORDS[kind]}, got {_show(got)}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"greater_than": "above", "greater_than_equal": "at least", "less_than": "below",
                 "less_than_equal": "at most"}[kind]
        bound = next(iter(ctx.values()))
        return f"{_show(got)} is out of range; allowed: {words} {bound}"
    if kind == "string_pattern_mismatch":
        return f"{_show(got)} is not a valid name; allowed: {NAME_ALLOWED}"
    if kind == "too_long" and "max_length" in ctx:
        return f"{ctx.get('actual_length', 'too many')} items; allowed: at most {ctx['max_length']}"
    if kind in ("too_short", "too_long"):
        return e["msg"].replace("List", "the list").replace("Value", "the value")
    msg = e["msg"]
    for pre in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(pre)
    return msg


def _show(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return "a mapping" if isinstance(v, dict) else "a list"
    return f"{type(v).__name__} {shorten(repr(v))}" if v is not None else "nothing (null)"


def _expected_words(expected: str) -> str:
    return expected.replace("'", "").replace(" or ", ", ")


def _is_union_tag(p: Any) -> bool:
    return isinstance(p, str) and (p.startswith("function-") or p in ("str", "int", "float", "bool"))
