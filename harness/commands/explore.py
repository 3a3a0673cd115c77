"""`rmq-chaos explore FILE [--out DIR] [--seed N] [--runs N]`: draw random fault schedules from the explore file's
fault space, run each as a scenario, check the invariants, shrink the first failure to a minimal scenario file.
Writes `<out>/<id>/` (schedules.jsonl, runs/, index.html, summary.json, minimal.yaml). Exit code: 0 no failure
within the budget, 1 a failure found (minimal.yaml written), 2 bad input or stopped by Ctrl-C/SIGTERM."""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.explore.load import Exploration

NAME = "explore"
HELP = ("random fault schedules against invariants; the first failure shrunk to a minimal scenario file "
        "(0 none found, 1 found, 2 bad input or stopped)")
EXIT_INVALID = 2
DEFAULT_OUT = "explore"
RUN_ID_TIME = "%Y%m%dT%H%M%SZ"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.commands.run import add_backend_arguments

    parser.add_argument("file", metavar="FILE", help="explore YAML file (docs/explore.md)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help="where the explore directory goes (default: explore)")
    parser.add_argument("--seed", type=int, metavar="N", help="override explore.seed")
    parser.add_argument("--runs", type=int, metavar="N", help="override explore.budget.runs")
    add_backend_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from harness.explore.load import load_exploration
    from harness.scenario import SourceError

    try:
        ex = load_exploration(args.file)
    except SourceError as err:
        print(err.one_line(), file=sys.stderr)
        return EXIT_INVALID
    for flag, value, key in (("--seed", args.seed, "seed"), ("--runs", args.runs, "runs")):
        if value is not None and value < (0 if key == "seed" else 1):
            print(f"{args.file}: {flag} {value}: allowed: {'0 or more' if key == 'seed' else '1 or more'}",
                  file=sys.stderr)
            return EXIT_INVALID
    if args.seed is not None:
        ex.space.seed = args.seed
    if args.runs is not None:
        ex.space.budget.runs = args.runs
    prepare = backend_of(args, ex)
    if prepare is None:
        return EXIT_INVALID
    from harness.commands.run import release_netns
    from harness.explore.loop import Explorer

    stamp = time.strftime(RUN_ID_TIME, time.gmtime())
    root = unique_dir(Path(args.out), f"{stamp}-{ex.name}-seed{ex.space.seed}")
    try:
        return Explorer(ex, root, prepare=prepare).run().code
    except KeyboardInterrupt:  # between runs (a run's own Ctrl-C winds it down and ends the exploration)
        print(f"explore {root.name}: stopped between runs; what was done is in {root}", file=sys.stderr)
        return EXIT_INVALID
    finally:
        release_netns()


def backend_of(args: argparse.Namespace, ex: Exploration) -> Callable[[Any], Any] | None:
    """The scenario hook applying --backend/--image/--program/--hosts; None once a one-line error is on stderr."""
    from harness.backends.factory import BackendUnavailable, check, with_backend
    from harness.commands.run import apply_host_arguments
    from harness.explore.schedule import Schedule, Window

    apply_host_arguments(args)

    def prepare(scenario: Any) -> Any:
        return with_backend(scenario, args.backend, args.image, args.program, args.hosts)

    quiet = Schedule((Window(ex.space.lead.min, ex.space.duration.min, ()),), ex.space.after)
    try:
        check(prepare(ex.scenario(quiet, f"{ex.name}-check")))
    except BackendUnavailable as err:
        print(f"{args.file}: {err}", file=sys.stderr)
        return None
    return prepare


def unique_dir(base: Path, stem: str) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = base / (stem if n == 1 else f"{stem}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{base}: no free explore directory name for {stem}")
