"""`rmq-chaos run SCENARIO [--keep-cluster] [--out DIR]`: validate the whole file (every run of its matrix), then
run each: cluster up, load, phases with faults, read-back, cluster down, analysis. Exit code: 0 when every
expectation of every run held, 1 when one failed, 2 when one could not be measured or a run did not complete."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.scenario import Scenario

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
    parser.add_argument("--backend", choices=("local", "compose", "ssh"),
                        help="override cluster.backend: local processes, containers of compose/ (Docker), or "
                             "processes on the hosts of an inventory (ssh)")
    add_host_arguments(parser)
    parser.add_argument("--image", metavar="IMAGE",
                        help="compose: the image of every node (overrides cluster.image and $ROCKETMQ_IMAGE)")
    parser.add_argument("--program", choices=("emulator", "apache"),
                        help="override cluster.program: the embedded emulator, or the Apache RocketMQ binary "
                             "distribution at $ROCKETMQ_HOME (local backend)")


def add_host_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hosts", metavar="FILE", help="ssh: the inventory (Ansible YAML), overriding cluster.hosts")
    parser.add_argument("--known-hosts", metavar="FILE",
                        help="ssh: the known_hosts file host keys are checked against (default ~/.ssh/known_hosts)")
    parser.add_argument("--accept-new-host-keys", action="store_true",
                        help="ssh: accept (and record) the keys of hosts seen for the first time; a changed key is "
                             "still refused")


def apply_host_arguments(args: argparse.Namespace) -> None:
    """Hand `--known-hosts` / `--accept-new-host-keys` to whatever runs the ssh backend (this process or a child)."""
    import os

    from harness.hosts.ssh import ACCEPT_NEW_ENV, KNOWN_HOSTS_ENV

    if getattr(args, "known_hosts", None):
        os.environ[KNOWN_HOSTS_ENV] = os.path.abspath(args.known_hosts)
    if getattr(args, "accept_new_host_keys", False):
        os.environ[ACCEPT_NEW_ENV] = "1"


def scenario_runs(path: str) -> list[Scenario] | None:
    """Every run of the scenario file at `path`, or None once its one-line error is on stderr."""
    from harness.scenario import SourceError, load_scenarios

    try:
        return load_scenarios(path)
    except SourceError as err:
        print(err.one_line(), file=sys.stderr)
        return None


def combine(codes: list[int]) -> int:
    """Jepsen's priority: false (1) over unknown (2) over true (0)."""
    if 1 in codes:
        return 1
    return max(codes, default=0)


def run(args: argparse.Namespace) -> int:
    from harness.runner import STATUS_INTERRUPTED, Runner

    runs = scenario_runs(args.scenario)
    if runs is None:
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
    apply_host_arguments(args)
    try:
        runs = [with_backend(r, args.backend, args.image, args.program, args.hosts) for r in runs]
        for r in runs:
            check(r)
    except BackendUnavailable as err:
        print(f"{args.scenario}: {err}", file=sys.stderr)
        return EXIT_INVALID
    if not room_for(args.scenario, runs, args.out):
        return EXIT_INVALID
    code = isolate(args.scenario, runs)
    if code is not None:
        return code
    codes, dirs = [], []
    try:
        for scenario in runs:
            runner = Runner(scenario, args.out, keep_cluster=args.keep_cluster, analyze=not args.no_report)
            result = runner.run()
            codes.append(result.exit_code)
            dirs.append(result.run_dir)
            print(f"{scenario.name}: {result.status}, exit {result.exit_code}, {result.run_dir}"
                  + (f" ({result.error})" if result.error else ""), file=sys.stderr)
            runner.hold_kept_cluster()
            if result.status == STATUS_INTERRUPTED:
                break
        if len(runs) > 1 and not args.no_report:
            compare_runs(dirs)
    finally:
        release_netns()
    return combine(codes)


def compare_runs(dirs: list) -> None:
    """A matrix's comparison page, `report-compare-<first run id>/` beside its run directories: `rmq-chaos report`
    of the runs that have a verdict (their reports are written again, the same). A failure is one line; the runs'
    own verdicts stand."""
    import subprocess
    from pathlib import Path

    from analysis.contract import RunLayout
    from harness.run_end import report

    analysed = [Path(d) for d in dirs if d is not None and RunLayout(Path(d)).verdict.exists()]
    if len(analysed) < 2:
        return
    out = analysed[0].parent / f"report-compare-{analysed[0].name}"
    code, stopped = report(["--no-progress", "--out", str(out), *map(str, analysed)], stdout=subprocess.DEVNULL)
    if (out / "index.html").exists() and not stopped:
        print(f"comparison of the matrix: {out / 'index.html'}", file=sys.stderr)
    else:
        print(f"the matrix's comparison page was not written ({f'stopped by {stopped}' if stopped else ''}"
              f"{'' if stopped else f'report exit {code}'})", file=sys.stderr)


def room_for(source: str, runs: list, out: str) -> bool:
    """Each run fits the run directory's and the state directory's filesystems (one line and False when one does
    not; a warning on stderr when it is close)."""
    from faults.journal import default_state_dir
    from harness.diskspace import NotEnoughSpace, check_space

    try:
        for r in runs:
            for warning in check_space(r, out, default_state_dir()):
                print(f"{source}: warning: {warning}", file=sys.stderr)
    except NotEnoughSpace as err:
        print(f"{source}: {err}", file=sys.stderr)
        return False
    return True


def isolate(source: str, runs: list) -> int | None:
    """Re-execute this command in a network namespace with only loopback when its runs need one (does not return
    then): a compose run in its holder container's namespace (harness/backends/compose/netns.py), an Apache
    program run of the local backend under `unshare --net` (harness/netns.py). Returns an exit code when that
    cannot be done, None when this process already is where it should be."""
    from harness import netns
    from harness.backends.compose import netns as compose_netns

    if netns.inside():
        return None
    compose = [r for r in runs if r.cluster.backend == "compose"]
    if compose:
        from faults.journal import default_state_dir
        from harness.backends.compose.image import image_for

        try:
            compose_netns.enter(image_for(compose[0].cluster), default_state_dir().resolve())
        except compose_netns.NetnsHolderError as err:
            print(f"{source}: {err}", file=sys.stderr)
            return EXIT_INVALID
    if any(r.cluster.program == "apache" and r.cluster.backend == "local" for r in runs):
        netns.reexec_isolated()  # Apache brokers bind 0.0.0.0: the run gets a namespace with only loopback
    return None


def release_netns() -> None:
    """Remove this process's network namespace holder, if it has one (compose runs)."""
    from faults.journal import default_state_dir
    from harness.backends.compose import netns as compose_netns

    if compose_netns.holder():
        try:
            compose_netns.release(default_state_dir().resolve())
        except Exception as err:  # noqa: BLE001 - the journal keeps it: `rmq-chaos cleanup` removes it later
            print(f"network namespace holder {compose_netns.holder()}: {err} (`rmq-chaos cleanup` removes it)",
                  file=sys.stderr)
