"""The load as a locustfile, for a person who wants Locust's web UI or its own command line:

    RMQ_LOAD_SPEC=spec.yaml locust -f loads/locustfile.py                      # web UI on :8089
    RMQ_LOAD_TOPIC=T RMQ_LOAD_NAMESRV=127.0.0.1:9876 RMQ_LOAD_RATE=500 \\
        locust -f loads/locustfile.py --headless -u 64 -t 60s --run-dir runs/try1
    RMQ_LOAD_SPEC=spec.yaml locust -f loads/locustfile.py --processes 4        # master + 4 workers
    (or --master / --worker on several machines, each with the same spec)

One user class per client of the spec (named after it, `fixed_count` = its users: start the test with their sum).
Rows go to `<run-dir>/requests/part-w<index>-<n>.parquet` (default run dir `runs/<run-id>`), one set per worker.
Phases with a `duration_s` run one after another from the test's start, with their rates. Locust's own statistics
show the latency from the intended start; failures are named by their outcome word.
"""
from __future__ import annotations

import gevent
from locust import events

import sys
import time
from pathlib import Path
from typing import Any

from loads.plugin import LoadPlugin
from loads.spec import LoadSpec, SpecError, spec_from_env
from loads.user import RocketMQUser, user_classes

try:
    SPEC: LoadSpec = spec_from_env()
except SpecError as _e:
    sys.exit(f"loads/locustfile.py: {_e}")  # one line, no traceback
DEFAULT_RUN_ID = time.strftime("load-%Y%m%d-%H%M%S")
DEFAULT_RUNS_DIR = "runs"

for _cls in user_classes(SPEC):
    globals()[_cls.__name__] = _cls
del _cls  # Locust collects every user class in the module's namespace: the loop variable must not be one
__all__ = ["RocketMQUser", *(c.name for c in SPEC.clients)]


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--run-id", default=DEFAULT_RUN_ID, env_var="RMQ_LOAD_RUN_ID",
                        help="run id in the rows and keys (default: load-<date>-<time>)")
    parser.add_argument("--run-dir", default="", env_var="RMQ_LOAD_RUN_DIR",
                        help="run directory; rows go to <run-dir>/requests/ (default: runs/<run-id>)")


@events.init.add_listener
def _attach(environment: Any, **_: Any) -> None:
    opts = environment.parsed_options
    attached: list[LoadPlugin] = []

    def follow_master_options(**__: Any) -> None:
        # a worker learns the master's --run-id/--run-dir with the spawn message, before its users start; this
        # listener is added before the plugin's own, so it runs first
        o, plugin = environment.parsed_options, attached[0]
        if o is not None and plugin.ctx is None:
            plugin.run_id, plugin.run_dir = o.run_id, Path(_run_dir(o))

    environment.events.test_start.add_listener(follow_master_options)
    plugin = LoadPlugin(environment, SPEC, _run_dir(opts), opts.run_id if opts else DEFAULT_RUN_ID)
    attached.append(plugin)
    if not _is_worker(environment) and any(p.duration_s for p in SPEC.phases):
        environment.events.test_start.add_listener(lambda **__: gevent.spawn(_walk_phases, plugin))


def _run_dir(opts: Any) -> str:
    if opts is not None and getattr(opts, "run_dir", ""):
        return opts.run_dir
    run_id = getattr(opts, "run_id", None) or DEFAULT_RUN_ID
    return str(Path(DEFAULT_RUNS_DIR) / run_id)


def _is_worker(environment: Any) -> bool:
    from locust.runners import WorkerRunner

    return isinstance(environment.runner, WorkerRunner)


def _walk_phases(plugin: LoadPlugin) -> None:
    """Phases with a duration, in order; the last one stays current."""
    for phase in SPEC.phases:
        plugin.set_phase(phase.name, phase.rate)
        if phase.duration_s is None:
            return
        gevent.sleep(phase.duration_s)
