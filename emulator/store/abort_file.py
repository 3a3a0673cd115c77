"""The store's `abort` file (`storePathRootDir/abort`): made when the store starts and removed when it shuts down
cleanly, so that the next start knows whether the last one ended normally (`DefaultMessageStore.createTempFile`,
`isTempFileExist`, and the end of `shutdown`). It is kept when the store was not writable or dispatch had not caught
up with the commitlog at shutdown, and when it cannot be removed (a read-only store): the next start then recovers
as after a crash (`recoverAbnormally`)."""
from __future__ import annotations

import os

from emulator.logs import store_log

NAME = "abort"


def path(root: str) -> str:
    return os.path.join(root, NAME)


def last_exit_ok(root: str) -> bool:
    ok = not os.path.exists(path(root))
    store_log.info("last shutdown %s", "normally" if ok else "abnormally")
    return ok


def create(root: str) -> None:
    name = path(root)
    try:
        os.makedirs(root, exist_ok=True)
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        store_log.info("%s already exists", name)
        return
    os.close(fd)
    store_log.info("%s create OK", name)


def remove_at_shutdown(root: str, writable: bool, dispatch_behind: int) -> None:
    if not (writable and dispatch_behind == 0):
        store_log.warning("the store may be wrong, so shutdown abnormally, and keep abort file.")
        return
    name = path(root)
    try:
        os.remove(name)
        ok = True
    except OSError:
        ok = False
    store_log.info("%s %s", name, "delete OK" if ok else "delete Failed")
