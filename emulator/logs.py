"""Log files where operators look for them: `$ROCKETMQ_LOG_DIR` or `~/logs/rocketmqlogs/`, `broker.log` (the
RocketmqBroker logger), `store.log` (RocketmqStore: flush, HA, PAGECACHERT), `namesrv.log`, a standalone
controller's `controller.log` (RocketmqController: elections) and `dledger.log` (DLedger: votes, roles), in
logback's `%d{yyy-MM-dd HH:mm:ss} %p %t - %m%n` layout so the same greps work on the emulator and on Apache's
broker. A controller embedded in the name server writes its lines where the real one does: RocketmqController into
`namesrv.log`, DLedger into `namesrv_default.log` (`setup(..., files=...)`)."""
from __future__ import annotations

import logging
import os
from pathlib import Path

LOG_DIR_ENV = "ROCKETMQ_LOG_DIR"
MILLIS_ENV = "RMQ_EMULATOR_LOG_MILLIS"
"""`1`: timestamps with milliseconds (`HH:mm:ss.SSS`), for measurements; the default is Apache's seconds"""
PATTERN = "%(asctime)s %(levelname)s %(threadName)s - %(message)s"
MILLIS_PATTERN = "%(asctime)s.%(msecs)03d %(levelname)s %(threadName)s - %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
BROKER = "RocketmqBroker"
STORE = "RocketmqStore"
NAMESRV = "RocketmqNamesrv"
CONTROLLER = "RocketmqController"
DLEDGER = "DLedger"
FILES = {BROKER: "broker.log", STORE: "store.log", NAMESRV: "namesrv.log", CONTROLLER: "controller.log",
         DLEDGER: "dledger.log"}
EMBEDDED_CONTROLLER_FILES = {CONTROLLER: "namesrv.log", DLEDGER: "namesrv_default.log"}

logging.addLevelName(logging.WARNING, "WARN")


def log_dir() -> Path:
    configured = os.environ.get(LOG_DIR_ENV)
    return Path(configured) if configured else Path.home() / "logs" / "rocketmqlogs"


def setup(names: tuple[str, ...], files: dict[str, str] | None = None) -> Path:
    """Open the log files of `names` (logger names above; `files` overrides a logger's file) in append mode;
    returns the directory. Loggers sharing a file share one handler."""
    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    millis = os.environ.get(MILLIS_ENV) == "1"
    formatter = logging.Formatter(MILLIS_PATTERN if millis else PATTERN, DATE_FORMAT)
    handlers: dict[str, logging.Handler] = {}
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        for old in list(logger.handlers):
            logger.removeHandler(old)
        file = (files or {}).get(name, FILES[name])
        handler = handlers.get(file)
        if handler is None:
            handler = handlers[file] = logging.FileHandler(directory / file, encoding="utf-8")
            handler.setFormatter(formatter)
        logger.addHandler(handler)
    return directory


broker_log = logging.getLogger(BROKER)
store_log = logging.getLogger(STORE)
namesrv_log = logging.getLogger(NAMESRV)
controller_log = logging.getLogger(CONTROLLER)
dledger_log = logging.getLogger(DLEDGER)
