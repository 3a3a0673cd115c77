"""`python -m emulator.broker -c broker.conf` (console script `rmq-broker`): one broker (master or slave) of the
embedded cluster, configured with Apache's broker.conf keys for the version profile. Run as a program it first
re-executes itself with a JVM-like allocator (`emulator.allocator`)."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from emulator import logs, safepoint, thread_dump
from emulator.allocator import exec_jvm_like, pretouch_heap
from emulator.autoswitch.checkpoint_file import JavaStartFailure
from emulator.config.broker_config import BrokerConfig, ConfigError
from emulator.controller import BrokerController
from emulator.stop_signal import stop_on_signals
from emulator.version import VersionError, resolve_profile


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        exec_jvm_like("emulator.broker", sys.argv[1:])
        pretouch_heap()
    parser = argparse.ArgumentParser(prog="rmq-broker", description="Embedded RocketMQ broker")
    parser.add_argument("-c", dest="config", help="broker.conf (Java properties, Apache key names)")
    parser.add_argument("-n", dest="namesrv", help="name server address list, e.g. 127.0.0.1:9876")
    parser.add_argument("--rocketmq-version", help="version profile (default $ROCKETMQ_VERSION or 4.9.1)")
    args = parser.parse_args(argv)
    try:
        profile = resolve_profile(args.rocketmq_version)
        overrides = {"namesrvAddr": args.namesrv} if args.namesrv else {}
        config = BrokerConfig(profile, args.config, overrides)
    except (VersionError, ConfigError) as e:
        print(f"rmq-broker: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"rmq-broker: cannot read {args.config}: {e.strerror}", file=sys.stderr)
        return 2
    safepoint.open_log(logs.setup((logs.BROKER, logs.STORE)))
    thread_dump.answer_sigquit()  # before the broker starts: SIGQUIT would otherwise end the process
    for key, value in config.unknown.items():
        logs.broker_log.warning("unknown property %s=%s ignored (not a RocketMQ %s broker property)", key, value,
                                profile.release)
    for key, value in config.items():
        logs.broker_log.info("%s=%s", key, value)
    stop = stop_on_signals()
    try:
        controller = BrokerController(config, profile)
        controller.start()
    except JavaStartFailure as e:  # BrokerStartup: printStackTrace, System.exit(-1), whatever threads run
        print(e.stack_trace(), file=sys.stderr, flush=True)
        logging.shutdown()
        os._exit(255)
    except OSError as e:
        print(f"rmq-broker: start failed: {e}", file=sys.stderr)
        logs.broker_log.error("start failed: %s", e)
        return 1
    line = (f"The broker[{config.get('brokerName')}, {controller.broker_addr}] boot success. serializeType=JSON "
            f"and name server is {config.get('namesrvAddr')}")
    logs.broker_log.info(line)
    print(line, flush=True)
    stop.wait()
    controller.shutdown()
    logs.broker_log.info("Shutdown hook over.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
