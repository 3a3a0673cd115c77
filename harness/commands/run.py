"""`rmq-chaos run SCENARIO [--keep-cluster] [--out DIR]`: validate the whole file (every run of its matrix), then
run each: cluster up, load, phases with faults, read-back, cluster down, analysis. Exit code: 0 when every
expectation of every run held, 1 when one failed, 2 when one could not be measured or a run did not complete."""
from __future__ import annotations

import argparse
import sys

NAME = "run"
HELP = "run a scenario file (every run of its matrix) and exit with the verdict (0 held, 1 failed, 2 unknown)"
EXIT_INVALID = 2
DEFAULT_OUT = "runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help="where run directories go (default: runs)")
    parser.add_argument("--keep-cluster", action="store_true",
                        help="keep the cluster up after the run until Ctrl-C/SIGTERM or `cluster down` (one run only)")
    parser.add_argument("--no-report", action="store_true", help="skip the analysis (exit 0 if the run completed)")
    parser.add_argument("--only", metavar="NAME", help="of a matrix, run only the combination with this name")
    add_backend_arguments(parser)


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("local", "compose"),
                        help="override cluster.backend: local processes, or containers of compose/ (Docker)")
    parser.add_argument("--image", metavar="IMAGE",
                        help="compose: the image of every node (overrides cluster.image and $ROCKETMQ_IMAGE)")
    parser.add_argument("--program", choices=("emulator", "apache"),
                        help="override cluster.program: the embedded emulator, or the Apache RocketMQ binary "
                             "distribution at $ROCKETMQ_HOME (local backend)")


def combine(codes: list[int]) -> int:
    """Jepsen's priority: false (1) over unknown (2) over true (0)."""
    if 1 in codes:
        return 1
    return max(codes, default=0)


def run(args: argparse.Namespace) -> int:
    from harness.runner import STATUS_INTERRUPTED, Runner
    from harness.scenarioload import SourceError, load_scenarios

    try:
        runs = load_scenarios(args.scenario)
    except SourceError as err:
        print(err.one_line(), file=sys.stderr)
        return EXIT_INVALID
    if args.only:
        names = [r.name for r in runs]
        runs = [r for r in runs if r.name == args.only]
        if not runs:
            print(f"{args.scenario}: --only {args.only!r}: no such run; allowed: {', '.join(names)}", file=sys.stderr)
            return EXIT_INVALID
    if args.keep_cluster and len(runs) > 1:
        print(f"{args.scenario}: --keep-cluster needs a single run; the matrix has {len(runs)} "
              f"(pick one with --only)", file=sys.stderr)
        return EXIT_INVALID
    from harness.backends.factory import BackendUnavailable, check, with_backend
    try:
        runs = [with_backend(r, args.backend, args.image, args.program) for r in runs]
        for r in runs:
            check(r)
    except BackendUnavailable as err:
        print(f"{args.scenario}: {err}", file=sys.stderr)
        return EXIT_INVALID
    if any(r.cluster.program == "apache" for r in runs):
        from harness import netns
        if not netns.inside():
            netns.reexec_isolated()  # Apache brokers bind 0.0.0.0: the run gets a namespace with only loopback
    codes = []
    for scenario in runs:
        runner = Runner(scenario, args.out, keep_cluster=args.keep_cluster, analyze=not args.no_report)
        result = runner.run()
        codes.append(result.exit_code)
        print(f"{scenario.name}: {result.status}, exit {result.exit_code}, {result.run_dir}"
              + (f" ({result.error})" if result.error else ""), file=sys.stderr)
        runner.hold_kept_cluster()
        if result.status == STATUS_INTERRUPTED:
            break
    return combine(codes)
