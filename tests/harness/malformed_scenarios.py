"""Malformed scenario files for the error tests: each is the valid base with one thing wrong, and what the one-line
error must say (the line, the key path, and a word from the problem or the allowed values). The base and the cases
are data, in `malformed_scenarios.yaml` beside this file."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Case:
    id: str
    old: str
    new: str
    line: int | None
    key: str
    says: str

    def text(self) -> str:
        assert self.old in BASE, self.id
        return BASE.replace(self.old, self.new, 1)


DATA = yaml.safe_load(Path(__file__).with_suffix(".yaml").read_text(encoding="utf-8"))
BASE: str = DATA["base"]
CASES = [Case(**case) for case in DATA["cases"]]
