"""Mounts and loop devices: reading /proc/mounts, attaching an image to a loop device, mounting, freezing,
checking with e2fsck, and finding which processes hold a mount busy."""
from __future__ import annotations

import errno
import glob
import os
import time
from dataclasses import dataclass

from faults.errors import ToolError
from faults.system.tools import run_tool

READONLY_OPTIONS = ("ro", "emergency_ro")
"""Mount options that mean the filesystem refuses writes (`emergency_ro`: ext4 after an error, kernel >= 6.x)."""
E2FSCK_IN_USE_TIMEOUT_S = 15.0
"""How long `e2fsck` waits for a device still "in use" right after its umount."""


def unescape_octal(field: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    fstype: str
    options: tuple[str, ...]

    @property
    def readonly(self) -> bool:
        return any(o in READONLY_OPTIONS for o in self.options)


def mounts() -> list[Mount]:
    with open("/proc/self/mounts", encoding="utf-8") as f:
        rows = [line.split() for line in f if line.strip()]
    return [Mount(unescape_octal(r[0]), unescape_octal(r[1]), r[2], tuple(r[3].split(","))) for r in rows if len(r) >= 4]


def mount_at(path: str) -> Mount | None:
    """The mount whose mount point is exactly `path` (the top one if stacked)."""
    real = os.path.realpath(path)
    found = [m for m in mounts() if m.target == real]
    return found[-1] if found else None


def loop_backing_file(device: str) -> str | None:
    """The image file behind /dev/loopN (None when it is not attached)."""
    name = os.path.basename(device)
    try:
        with open(f"/sys/block/{name}/loop/backing_file", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def loop_devices_for(image: str) -> list[str]:
    """Every loop device currently backed by `image`."""
    real = os.path.realpath(image)
    found = []
    for path in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            with open(path, encoding="utf-8") as f:
                backing = f.read().strip()
        except FileNotFoundError:  # detached (by another process) between the listing and the read
            continue
        if backing.removesuffix(" (deleted)") == real:
            found.append("/dev/" + path.split("/")[3])
    return sorted(found)


def loop_attach(image: str) -> str:
    """Attach an image to a free loop device (no autoclear: it stays until `loop_detach`); returns /dev/loopN."""
    return run_tool(["losetup", "--find", "--show", image]).stdout.strip()


def loop_detach(device: str) -> bool:
    """Detach a loop device; False when it was not attached."""
    if loop_backing_file(device) is None:
        return False
    try:
        run_tool(["losetup", "--detach", device])
    except ToolError:
        if loop_backing_file(device) is None:  # another process detached it in between: detached is detached
            return False
        raise
    return True


def device_number(device: str) -> str:
    """"MAJ:MIN" of a block device node."""
    rdev = os.stat(device).st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def mkfs_ext4(image: str, label: str) -> None:
    run_tool(["mkfs.ext4", "-q", "-F", "-L", label[:16], image])


def mount(device: str, target: str, fstype: str = "ext4", options: str = "") -> None:
    argv = ["mount", "-t", fstype]
    if options:
        argv += ["-o", options]
    run_tool([*argv, device, target])


def umount(target: str) -> None:
    """Unmount; a busy mount raises `ToolError` naming the processes that hold it."""
    try:
        run_tool(["umount", target])
    except ToolError as e:
        holders = holders_of(target)
        if holders:
            raise ToolError(f"{e}; held by pids {holders}") from e
        raise


def freeze(target: str) -> None:
    run_tool(["fsfreeze", "--freeze", target])


def thaw(target: str) -> bool:
    """Thaw a frozen filesystem; False when it was not frozen (fsfreeze answers EINVAL then)."""
    proc = run_tool(["fsfreeze", "--unfreeze", target], ok_codes=(0, 1))
    if proc.returncode == 0:
        return True
    if "Invalid argument" in proc.stderr:
        return False
    raise ToolError(f"fsfreeze --unfreeze {target}: {proc.stderr.strip()}")


def e2fsck(device: str, in_use_timeout_s: float = E2FSCK_IN_USE_TIMEOUT_S) -> tuple[int, str]:
    """`e2fsck -f -y`; exit 0 (clean) and 1 (errors corrected) are success, the rest raise. A device still "in use"
    right after its umount (exit 8: a copy of the mount lives on in a mount namespace made meanwhile, e.g. by an
    `ip netns exec`, until that namespace's last process ends) is tried again every 0.2 s for `in_use_timeout_s`."""
    deadline = time.monotonic() + in_use_timeout_s
    while True:
        proc = run_tool(["e2fsck", "-f", "-y", device], ok_codes=(0, 1, 8))
        if proc.returncode != 8:
            break
        if "in use" not in proc.stdout + proc.stderr or time.monotonic() >= deadline:
            msg = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
            held = mounted_in(device)
            raise ToolError(f"e2fsck -f -y {device}: exit 8: {msg}"
                            + (f" (still mounted in the mount namespace of pids {held[:8]})" if held else ""))
        time.sleep(0.2)
    tail = [line for line in proc.stdout.splitlines() if line.strip()] or \
        [line for line in proc.stderr.splitlines() if line.strip()]
    return proc.returncode, (tail[-1] if tail else "")


def mounted_in(device: str) -> list[int]:
    """Pids in whose mount namespace `device` is still mounted (a copy of the mount in another namespace keeps the
    filesystem in use after its umount here), by /proc/<pid>/mountinfo's major:minor."""
    try:
        rdev = os.stat(device).st_rdev
    except OSError:
        return []
    want = f"{os.major(rdev)}:{os.minor(rdev)}"
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as f:
                if any(line.split(" ", 3)[2:3] == [want] for line in f):
                    found.append(int(pid))
        except OSError:
            continue
    return sorted(found)


def holders_of(target: str) -> list[int]:
    """Pids with an open file, mapping, cwd or root under `target`."""
    prefix = os.path.realpath(target).rstrip("/") + "/"
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        links = []
        try:
            links += [os.path.join(f"/proc/{pid}/fd", fd) for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        links += [f"/proc/{pid}/cwd", f"/proc/{pid}/root"]
        for link in links:
            try:
                dest = os.readlink(link)
            except OSError:
                continue
            if (dest + "/").startswith(prefix):
                found.add(int(pid))
                break
        else:
            try:
                with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
                    if any(prefix in line for line in f):
                        found.add(int(pid))
            except OSError:
                pass
    return sorted(found)


def write_probe(path: str) -> int:
    """Create `path` for writing and write 4 KiB; returns 0 or the errno of the failure (e.g. EROFS)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as e:
        return e.errno or errno.EIO
    try:
        os.write(fd, b"\0" * 4096)
        return 0
    except OSError as e:
        return e.errno or errno.EIO
    finally:
        os.close(fd)
