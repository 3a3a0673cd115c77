"""Benchmark of the bounded readers: CPU seconds (process time, so a loaded machine inflates it little) that the
scenario loader and the run-directory reader spend before refusing each crafted file, and the one line they give.
The largest valid-looking inputs (a 256 KiB file of phases, a matrix at the work cap) are timed too.

Prints the figures; asserts nothing about speed (the goal is bounded work: every crafted file refused in well under
a second of CPU; with the loader of main before this change, the alias bomb and the 20 000-phase file were still
parsing when stopped after 8 s, and deep nesting, alias cycles and the 5000-digit integer crashed with tracebacks).

    PYTHONPATH=. .venv/bin/python benchmarks/hostile_input.py
    PYTHONPATH=. .venv/bin/python benchmarks/hostile_input.py --repeat 5
"""
from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from analysis.boundedyaml import YamlLimit, safe_load_bounded
from harness.scenario import SourceError, load_scenario_text

ONE_PHASE = "phases: [{name: a, duration: 1s}]\n"
LAUGHS = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "name: x\n"


def crafted() -> dict[str, str]:
    """Files built to be expensive, each with a valid-looking rest."""
    return {
        "billion laughs (9^9 expansion)": LAUGHS,
        "20 000 nested lists": "name: x\nphases: " + "[" * 20000 + "]" * 20000 + "\n",
        "alias cycle": "name: x\nphases: &p [*p]\n",
        "5000-digit integer": "name: x\ntopic: {queues: " + "9" * 5000 + "}\n" + ONE_PHASE,
        "400-digit duration": "name: x\nphases: [{name: a, duration: " + "9" * 400 + "s}]\n",
        "20 000 phases (1 MiB)": "name: x\nphases:\n" + "".join(f"  - {{name: p{i}, duration: 1ms}}\n"
                                                              for i in range(20000)),
        "4^10-run matrix": "name: x\ncluster: {allow_keys: [" + ", ".join(f"k{i}" for i in range(10)) + "]}\n"
                           + ONE_PHASE + "matrix:\n" + "".join(f"  cluster.broker.common.k{i}: [1, 2, 3, 4]\n"
                                                               for i in range(10)),
        "near-cap file: 4000 phases": "name: x\nphases:\n" + "".join(f"  - {{name: p{i}, duration: 1ms}}\n"
                                                                     for i in range(4000)),
        "NUL byte": "name: x\x00\n" + ONE_PHASE,
    }


def measure(text: str, repeat: int) -> tuple[float, str]:
    best, line = float("inf"), "accepted"
    for _ in range(repeat):
        t = time.process_time()
        try:
            load_scenario_text("crafted.yaml", text)
            line = "accepted"
        except SourceError as err:
            line = err.one_line()
        best = min(best, time.process_time() - t)
    return best, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="best of this many (CPU seconds)")
    args = parser.parse_args()
    table = Table(title="CPU seconds to refuse a crafted scenario file (best of --repeat)")
    for col in ("file", "bytes", "CPU s", "the one line"):
        table.add_column(col)
    for name, text in crafted().items():
        cpu, line = measure(text, args.repeat)
        table.add_row(name, str(len(text.encode())), f"{cpu:.3f}", line[:110])
    t = time.process_time()
    try:
        safe_load_bounded(LAUGHS)
        outcome = "accepted"
    except YamlLimit as err:
        outcome = err.problem
    table.add_row("run dir scenario.yaml: billion laughs", str(len(LAUGHS)), f"{time.process_time() - t:.3f}",
                  outcome[:110])
    Console(width=180).print(table)


if __name__ == "__main__":
    main()
