"""The torn commitlog stores of tests/emulator/torn_store.py on both programs: each store is laid out, a broker
(the emulator, then the real Apache RocketMQ at `--rocketmq-home`) starts on it, and its answers to GET_MAX_OFFSET
for the two queues plus the recovery lines of its store.log are taken; then a markdown table of both side by side,
with the end the emulator's rule gives. Figures only, no assertion; traffic on 127.0.0.1 only.

    .venv/bin/python benchmarks/torn_records_vs_real.py --rocketmq-home /work/rmq-dist/rocketmq-4.9.1
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import support  # noqa: F401 - the repository on sys.path

sys.path.insert(0, str(support.REPO / "tests"))
sys.path.insert(0, str(support.REPO / "tests" / "emulator"))
from torn_store import FILE_SIZE, TOPIC, cases, write_commitlog  # noqa: E402
from waiting import poll  # noqa: E402

from harness.backends.ports import PortPicker  # noqa: E402
from remoting.admin import BrokerAdmin  # noqa: E402

RECOVERY_LINE = re.compile(r"(last shutdown \w+|recover physics file end.*|CRC check failed.*|\[BUG\].*|"
                           r"found a half message.*|found a illegal magic code.*)")


def start(program: str, home: str, root: Path, port: int) -> tuple[subprocess.Popen, Path]:
    conf = root / "broker.conf"
    conf.write_text(f"brokerClusterName=c\nbrokerName=broker-a\nbrokerId=0\nbrokerRole=ASYNC_MASTER\n"
                    f"brokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\nlistenPort={port}\nhaListenPort={port + 1}\n"
                    f"storePathRootDir={root / 'store'}\nstorePathCommitLog={root / 'store' / 'commitlog'}\n"
                    f"mappedFileSizeCommitLog={FILE_SIZE}\nnamesrvAddr=127.0.0.1:1\n", encoding="utf-8")
    logs = root / "logs"
    if program == "emulator":
        argv = [sys.executable, "-m", "emulator.broker", "-c", str(conf)]
        env = dict(os.environ, ROCKETMQ_LOG_DIR=str(logs), RMQ_EMULATOR_BIND="127.0.0.1")
    else:
        argv = [str(Path(home) / "bin" / "mqbroker"), "-c", str(conf)]
        env = dict(os.environ, ROCKETMQ_HOME=home, JAVA_OPT_EXT=f"-Xms256m -Xmx256m -Duser.home={root}")
        logs = root / "logs" / "rocketmqlogs"
    proc = subprocess.Popen(argv, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    return proc, logs


def measure(program: str, home: str, data: bytes, port: int) -> tuple[list[int], list[str]]:
    with tempfile.TemporaryDirectory(prefix=f"torn-{program}-") as tmp:
        root = Path(tmp)
        write_commitlog(root / "store", data)
        proc, logs = start(program, home, root, port)
        admin = BrokerAdmin()
        try:
            def answered():
                if proc.poll() is not None:
                    return "exited"
                try:
                    return [admin.get_max_offset(f"127.0.0.1:{port}", TOPIC, q) for q in (0, 1)]
                except Exception:  # noqa: BLE001 - not listening yet
                    return None

            offsets = poll(answered, timeout_s=90, what=f"{program} answering")
        finally:
            admin.close()
            proc.terminate()
            proc.wait(60)
        text = (logs / "store.log").read_text(errors="replace") if (logs / "store.log").exists() else ""
        lines = sorted({m.group(1) for m in RECOVERY_LINE.finditer(text)})
        return (offsets if isinstance(offsets, list) else [-1, -1]), lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rocketmq-home", required=True)
    ap.add_argument("--only", nargs="*", help="case names (default: all)")
    args = ap.parse_args()
    picker = PortPicker(low=33000, high=33900)
    print("| case | end by the rule | emulator: max offsets q0, q1 | real: max offsets q0, q1 | real's store.log | "
          "emulator's lines the same |")
    print("|---|---|---|---|---|---|")
    for name, (data, end) in cases().items():
        if args.only and name not in args.only:
            continue
        got = {}
        for program in ("emulator", "apache"):
            got[program] = measure(program, args.rocketmq_home, data, picker.block((0, 1)))
            print(f"{name} {program}: {got[program]}", file=sys.stderr, flush=True)
        emulator_lines, real_lines = ([re.sub(r"/\S+/", "", ln) for ln in got[p][1]] for p in ("emulator", "apache"))
        print(f"| {name} | {end} | {got['emulator'][0]} | {got['apache'][0]} | {'; '.join(real_lines)} | "
              f"{'yes' if emulator_lines == real_lines else 'no: ' + '; '.join(emulator_lines)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
