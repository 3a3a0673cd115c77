"""The diagnose catalogs as data: `load(cls, name)` reads the YAML list `name` beside this module (fingerprints.yaml,
mechanisms.yaml) and validates it into a tuple of the dataclass `cls`, in the file's order: every field of the
right type, none missing that has no default, no unknown key."""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import TypeAdapter

T = TypeVar("T")
HERE = Path(__file__).resolve().parent
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it (a tenth of the pure-Python one's time at import), else that one."""


def load(cls: type[T], name: str) -> tuple[T, ...]:
    """The entries of `name` as `cls` objects (pydantic.ValidationError names the entry and field that is off)."""
    data = yaml.load((HERE / name).read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    return TypeAdapter(tuple[cls, ...]).validate_python(data)  # type: ignore[valid-type]
