"""`python -m emulator.controller_main -c controller.conf` (console script `rmq-controller`): a standalone 5.x
controller, as Apache's `bin/mqcontroller`. One member of the DLedger group named by `controllerDLegerPeers` and
`controllerDLegerSelfId`; it serves brokers and `mqadmin` on its own peer port. Logs: `controller.log` and
`dledger.log` in the log directory."""
from __future__ import annotations

import argparse
import sys

from emulator import logs
from emulator.config.properties import load_properties_file
from emulator.controllermode.config import ControllerConfig, ControllerConfigError
from emulator.controllermode.node import ControllerNode
from emulator.stop_signal import listening, stop_on_signals

STANDALONE_WIRE_VERSION = 0
"""A real 5.3.0 `mqcontroller` answers with header version 0: ControllerStartup, unlike NamesrvStartup, never sets
`rocketmq.remoting.version` (recorded; docs/emulator.md)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rmq-controller", description="Embedded RocketMQ 5.x controller")
    parser.add_argument("-c", dest="config", required=True, help="controller.conf (Java properties)")
    args = parser.parse_args(argv)
    try:
        config = ControllerConfig(load_properties_file(args.config), args.config)
    except OSError as e:
        print(f"rmq-controller: cannot read {args.config}: {e.strerror}", file=sys.stderr)
        return 2
    except ControllerConfigError as e:
        print(f"rmq-controller: {e}", file=sys.stderr)
        return 2
    print(f"load config properties file OK, {args.config}", flush=True)
    logs.setup((logs.CONTROLLER, logs.DLEDGER))
    node = ControllerNode(config, STANDALONE_WIRE_VERSION)
    if not listening("rmq-controller", node.addr, node.start):
        return 1
    stop = stop_on_signals()
    tip = "The Controller Server boot success. serializeType=JSON"
    logs.controller_log.info(tip)
    print(tip, flush=True)
    stop.wait()
    node.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
