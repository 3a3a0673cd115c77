"""The locustfile as a person runs it: `locust -f loads/locustfile.py` with the spec from environment variables,
headless with `--processes 2` (a master forking two workers, each writing its own shard), and with the web UI
(`--autostart`), whose own statistics count the sends the rows record."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from loads_support import assert_contiguous_seqs, read_rows, rows_by_key
from waiting import poll

from loads.process import free_port

REPO = Path(__file__).resolve().parents[2]
LOCUSTFILE = str(REPO / "loads" / "locustfile.py")


def locust(args: list[str], broker, cwd: Path, timeout_s: float = 90, on_running=None,
           extra_env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `locust -f loads/locustfile.py ARGS` in its own session (so its forked workers can be ended with it);
    returns (exit code, output)."""
    env = {**os.environ, "RMQ_LOAD_TOPIC": "LoadTopic", "RMQ_LOAD_NAMESRV": broker.addr, "RMQ_LOAD_RATE": "200",
           "RMQ_LOAD_USERS": "4", **(extra_env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "locust", "-f", LOCUSTFILE, *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        if on_running is not None:
            on_running()
        out, _ = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out


def test_locustfile_with_processes_as_a_person_runs_it(broker, tmp_path):
    run_dir = tmp_path / "person-run"
    port = free_port()
    code, out = locust(["--headless", "-u", "4", "-r", "100", "-t", "3s", "--processes", "2", "--run-dir",
                        str(run_dir), "--run-id", "person", "--only-summary", "--master-bind-host", "127.0.0.1",
                        "--master-bind-port", str(port), "--master-port", str(port), "--csv",
                        str(tmp_path / "locust")], broker, tmp_path)
    assert code == 0, out[-3000:]
    table = read_rows(run_dir)
    assert set(table.column("run_id").to_pylist()) == {"person"}
    per_worker = assert_contiguous_seqs(table)
    assert len(per_worker) == 2
    assert set(rows_by_key(run_dir)) == set(broker.keys())
    assert "SEND" in out  # Locust's own summary table lists the sends
    # Locust's own statistics on the master, from the workers' reports, count every row (the last ones included)
    with open(tmp_path / "locust_stats.csv", newline="") as f:
        counts = {r["Name"]: (int(r["Request Count"]), int(r["Failure Count"])) for r in csv.DictReader(f)}
    assert counts == {"flood": (table.num_rows, 0), "Aggregated": (table.num_rows, 0)}


def test_locustfile_with_the_web_ui(broker, tmp_path):
    run_dir = tmp_path / "ui-run"
    port = free_port()
    seen: dict = {}

    def watch_ui() -> None:
        def stats():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats/requests", timeout=2) as r:
                    doc = json.load(r)
            except OSError:
                return None
            sends = [s for s in doc["stats"] if s["method"] == "SEND"]
            return doc if sends and sends[0]["num_requests"] > 50 else None
        seen.update(poll(stats, 30, "the web UI to show sends"))

    code, out = locust(["--autostart", "--autoquit", "0", "-u", "4", "-r", "100", "-t", "4s", "--web-host",
                        "127.0.0.1", "--web-port", str(port), "--run-dir", str(run_dir), "--run-id", "ui"],
                       broker, tmp_path, on_running=watch_ui)
    assert code == 0, out[-3000:]
    assert seen["user_count"] == 4 and seen["stats"][0]["name"] == "flood"
    rows = rows_by_key(run_dir)
    assert set(rows) == set(broker.keys()) and {r["worker"] for r in rows.values()} == {"w0"}


def test_bad_spec_in_the_environment_is_one_line(broker, tmp_path):
    code, out = locust(["--headless", "-t", "1s"], broker, tmp_path, extra_env={"RMQ_LOAD_RATE": "fast"})
    assert code != 0
    assert out.strip().splitlines()[-1] == ("loads/locustfile.py: environment: RMQ_LOAD_RATE: Input should be a "
                                            "valid number, unable to parse string as a number")
    assert not (tmp_path / "runs").exists()
