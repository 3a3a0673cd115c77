"""Log files where operators look for them: `$ROCKETMQ_LOG_DIR` or `~/logs/rocketmqlogs/`, `broker.log` (the
RocketmqBroker logger), `store.log` (RocketmqStore: flush, HA, PAGECACHERT), `namesrv.log`, in logback's
`%d{yyy-MM-dd HH:mm:ss} %p %t - %m%n` layout so the same greps work on the emulator and on Apache's broker."""
from __future__ import annotations

import logging
import os
from pathlib import Path

LOG_DIR_ENV = "ROCKETMQ_LOG_DIR"
PATTERN = "%(asctime)s %(levelname)s %(threadName)s - %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
BROKER = "RocketmqBroker"
STORE = "RocketmqStore"
NAMESRV = "RocketmqNamesrv"
FILES = {BROKER: "broker.log", STORE: "store.log", NAMESRV: "namesrv.log"}

logging.addLevelName(logging.WARNING, "WARN")


def log_dir() -> Path:
    configured = os.environ.get(LOG_DIR_ENV)
    return Path(configured) if configured else Path.home() / "logs" / "rocketmqlogs"


def setup(names: tuple[str, ...]) -> Path:
    """Open the log files of `names` (logger names above) in append mode; returns the directory."""
    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    formatter = logging.Formatter(PATTERN, DATE_FORMAT)
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        for old in list(logger.handlers):
            logger.removeHandler(old)
        handler = logging.FileHandler(directory / FILES[name], encoding="utf-8")
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    return directory


broker_log = logging.getLogger(BROKER)
store_log = logging.getLogger(STORE)
namesrv_log = logging.getLogger(NAMESRV)
