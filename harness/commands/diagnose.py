"""`rmq-chaos diagnose PATH...`: name the mechanism behind an incident from its logs and write a scenario for it.

Exit codes: 0 a known mechanism was found (its scenario written and linted); 1 no known mechanism in what was read;
2 nothing could be read (every path missing, binary or unreadable); 3 a scenario could not be written (one line
says why). Files that cannot be read are one line each on stderr (at most MAX_SKIP_LINES, then a count by reason)
and never stop the rest.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

NAME = "diagnose"
HELP = "find the mechanism behind an incident in its logs (broker, client, application, jstack, broker.conf)"
EXIT_FOUND, EXIT_NONE, EXIT_UNREADABLE, EXIT_NOT_WRITTEN = 0, 1, 2, 3
MAX_SKIP_LINES = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files or directories (plain or .gz)")
    parser.add_argument("--version", dest="rmq_version", default=None,
                        help="the cluster's RocketMQ version (default: found in the logs, else the scenario's)")
    parser.add_argument("--out", default="diagnosis", help="directory for the scenario files (default: diagnosis)")
    parser.add_argument("--no-scenario", action="store_true", help="print the findings only, write nothing")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from emulator.version import VersionError, profile_for
    from harness.diagnose import rank, render, reproduction, scan, write
    from harness.scenario import SourceError

    evidence, skipped = scan(args.paths)
    for s in skipped[:MAX_SKIP_LINES]:
        print(s.line(), file=sys.stderr)
    if len(skipped) > MAX_SKIP_LINES:
        reasons = Counter(s.reason.split(" (")[0] for s in skipped[MAX_SKIP_LINES:])
        print(f"diagnose: {len(skipped) - MAX_SKIP_LINES} more files skipped: "
              + ", ".join(f"{why} {n}" for why, n in reasons.most_common()), file=sys.stderr)
    if not evidence.files_read:
        print("diagnose: nothing could be read in " + " ".join(args.paths), file=sys.stderr)
        return EXIT_UNREADABLE
    version = args.rmq_version or (next(iter(evidence.versions)) if len(evidence.versions) == 1 else None)
    if version is not None:
        try:
            profile_for(version)
        except VersionError as err:
            print(f"diagnose: --version: {err}; the scenarios keep their own version", file=sys.stderr)
            version = None
    findings = rank(evidence)
    written, status = {}, EXIT_FOUND if findings else EXIT_NONE
    for f in findings:
        if args.no_scenario:
            continue
        try:
            written[f.mechanism.id] = str(write(reproduction(f, version, evidence.broker_conf), Path(args.out)))
        except SourceError as err:
            written[f.mechanism.id] = f"not written: {err.one_line()}"
            status = EXIT_NOT_WRITTEN
        except OSError as err:
            written[f.mechanism.id] = f"not written: {args.out}: {err.strerror or err}"
            status = EXIT_NOT_WRITTEN
    try:
        print(render(findings, evidence, written), flush=True)
    except BrokenPipeError:  # `diagnose ... | head`: the reader left; the findings and scenarios stand
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return status
