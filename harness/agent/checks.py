"""What a host must have for a node of rmq-chaos, and which of its directories are the harness's own, checked before
anything is started anywhere. Standard library only: the control node runs this file's source with the host's own
Python over SSH (`python3 - MODE ARGS < checks.py`) before the harness is put on the host, and the agent imports it
for `hello`.

`host_checks(rocketmq_home, version, workdir, venv)` -> {"python", "machine", "root", "problems": [one line each]}:
the work directory and venv are the harness's own or do not exist yet (`owned_problem`), root (loop mounts,
cgroups), the loop devices and ext4 tools of a store, the cgroup v1 controllers of a node (memory, blkio, freezer,
cpu), and for an Apache program the distribution at `rocketmq_home` (its bin/mqbroker, the jar of `version`) and a
`java`.

**Own only what you made.** A directory the harness makes (the work directory, the venv) carries `OWNED`, written as
the first thing after the `mkdir` of a directory that did not exist, so a half-made one is still recognised. An
existing directory without it (empty or not), one that is a symlink, not a directory, of another kind (a work
directory named as a venv), of another user, writable by others, or that resolves on the host to `/` or a system
directory (`path_problem`, also what the inventory refuses when it is read) is refused in one line and never removed,
re-moded or written into. `make_owned` makes the missing parents (mode 755, never touching one that exists) and the
directory; `prepare` (the first step of an install) makes or checks both and empties a stale venv of ours except its
marker; `cleanup_facts` tells `cleanup --hosts` whether there is anything of ours to replay.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import stat
import sys
import time

CONTROLLERS = ("memory", "blkio", "freezer", "cpu")
STORE_TOOLS = ("losetup", "mkfs.ext4", "mount", "umount", "e2fsck")
OWNED = ".rmq-chaos-owned"
"""The marker file of a directory the harness made (the work directory, the venv)."""
KINDS = {"workdir": "rmq_chaos_workdir", "venv": "rmq_chaos_venv"}
"""What an owned directory is, and the inventory variable that names it."""
MODES = {"workdir": 0o700, "venv": 0o755}
PARENT_MODE = 0o755
BUNDLE_MARKER = ".rmq-chaos-bundle"  # harness.hosts.bundle.MARKER (this file cannot import the harness)
PATH_RE = re.compile(r"[A-Za-z0-9/._+@-]+\Z")
PATH_MAX = 1024
SYSTEM_DIRS = frozenset("""
    /bin /boot /cdrom /dev /efi /etc /home /lib /lib32 /lib64 /libx32 /lost+found /media /mnt /opt /proc /root /run
    /sbin /snap /srv /sys /tmp /usr /var
    /usr/bin /usr/games /usr/include /usr/lib /usr/lib32 /usr/lib64 /usr/libexec /usr/libx32 /usr/local /usr/sbin
    /usr/share /usr/src
    /usr/local/bin /usr/local/etc /usr/local/games /usr/local/include /usr/local/lib /usr/local/libexec /usr/local/man
    /usr/local/sbin /usr/local/share /usr/local/src
    /var/backups /var/cache /var/crash /var/games /var/lib /var/local /var/lock /var/log /var/mail /var/opt /var/run
    /var/snap /var/spool /var/tmp /var/www
    /run/lock /run/shm /run/user
""".split())
"""Directories of the system itself: never a work directory or venv (a directory of its own below one is fine)."""
KERNEL_FS = ("/proc", "/sys", "/dev")
"""Nothing below these (kernel file systems, devices) either."""
HOMES = ("/home",)
"""Their direct children are people's home directories."""
PATH_ALLOWED = ("an absolute path of letters, digits and / . _ - + @ naming a directory of its own, such as "
                "/var/lib/rmq-chaos-agent or /opt/rmq-chaos (not /, a system directory such as /usr, /var/lib or /tmp, "
                "a home directory, or anything under /proc, /sys, /dev)")
OWNED_ALLOWED = ("allowed: a path that does not exist yet (the harness makes it) or a directory the harness made "
                 f"(it holds {OWNED}); nothing was changed")


def path_form_problem(path: str) -> str | None:
    """Why `path` is not a plain absolute path (letters, digits and / . _ - + @, no empty, '.' or '..' part; one
    trailing '/' is allowed); None if it is."""
    if not path or len(path) > PATH_MAX:
        return f"is empty or longer than {PATH_MAX} characters"
    if not PATH_RE.match(path):
        return "has characters not allowed in a path"
    if not path.startswith("/"):
        return "is not an absolute path"
    parts = path[1:-1].split("/") if path.endswith("/") and path != "/" else path[1:].split("/")
    if path != "/" and any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' part"
    return None


def path_problem(path: str) -> str | None:
    """Why `path` (as written, or as resolved on the host) cannot name a directory the harness owns; None if it can.
    The allowed values are `PATH_ALLOWED`."""
    why = path_form_problem(path)
    if why:
        return why
    clean = path.rstrip("/") or "/"
    if clean == "/":
        return "is the root directory"
    if clean in SYSTEM_DIRS:
        return "is a system directory"
    if any(clean.startswith(k + "/") for k in KERNEL_FS):
        return f"is under {next(k for k in KERNEL_FS if clean.startswith(k + '/'))} (a kernel file system)"
    if os.path.dirname(clean) in HOMES:
        return "is a home directory"
    return None


def _show(text: str) -> str:
    """`text` on one line, cut to 200 characters (a name read on a host goes into a one-line message)."""
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:200] + "..."


def _read_marker(path: str) -> dict[str, str] | None:
    """The marker of `path` as {key: value}, or None when there is none (or it is not a regular file of ours)."""
    marker = os.path.join(path, OWNED)
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        lines = f.read(4096).splitlines()
    if not lines or not lines[0].startswith("rmq-chaos"):
        return None
    return dict(ln.split(": ", 1) for ln in lines[1:] if ": " in ln)


def owned_problem(path: str, kind: str) -> str | None:
    """Why the harness may not make or use `path` as its `kind` ("workdir" or "venv") directory on this host (one
    line naming the variable, the path and what is allowed); None when it does not exist yet or is the harness's."""
    key = KINDS[kind]
    where = f"{path} ({key})"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as err:
        return f"{where} cannot be examined ({err.strerror}); {OWNED_ALLOWED}"
    if st is not None and stat.S_ISLNK(st.st_mode):
        return f"{where} is a symlink (to {_show(os.readlink(path))}); {OWNED_ALLOWED}"
    real = os.path.realpath(path)
    why = path_problem(real)
    if why:
        return f"{where} resolves to {_show(real)} on this host, which {why}; allowed: {PATH_ALLOWED}"
    if st is None:
        parent = os.path.dirname(path)
        while not os.path.lexists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            return f"{where} cannot be made: {parent} is not a directory; {OWNED_ALLOWED}"
        return None
    if not stat.S_ISDIR(st.st_mode):
        return f"{where} exists and is not a directory; {OWNED_ALLOWED}"
    marker = _read_marker(path)
    if marker is None:
        return f"{where} exists and was not made by rmq-chaos (no {OWNED} in it); {OWNED_ALLOWED}"
    if marker.get("kind") != kind:
        return (f"{where} is a {marker.get('kind', 'directory')} rmq-chaos made for {marker.get('host', '?')}, not a "
                f"{kind}; {OWNED_ALLOWED}")
    if st.st_uid != os.geteuid():
        return f"{where} belongs to uid {st.st_uid}, not this user (uid {os.geteuid()}); {OWNED_ALLOWED}"
    if st.st_mode & 0o022:
        return f"{where} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); {OWNED_ALLOWED}"
    return None


class NotOwned(RuntimeError):
    """A directory the harness may not make or use (`owned_problem`'s line)."""


def make_owned(path: str, kind: str, host: str, made_by: str) -> bool:
    """Make `path` as the harness's `kind` directory: its missing parents (mode 755; an existing one is never
    touched), then the directory, its marker written first; True when it was made. An existing directory must be
    the harness's (`NotOwned` otherwise); it is left as it is."""
    problem = owned_problem(path, kind)
    if problem:
        raise NotOwned(problem)
    if os.path.lexists(path):
        return False
    missing = []
    parent = os.path.dirname(path)
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for d in reversed(missing):
        try:
            os.mkdir(d, PARENT_MODE)
        except FileExistsError:
            pass  # made meanwhile by someone else: not ours, and used as it is
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        problem = owned_problem(path, kind)  # made meanwhile: by another install of ours (a shared venv) or not
        if problem:
            raise NotOwned(problem) from None
        return False
    host, made_by = _show(host), _show(made_by)
    text = (f"rmq-chaos made this directory and replaces what is in it; put nothing of yours here\nkind: {kind}\n"
            f"variable: {KINDS[kind]}\npath: {path}\nhost: {host}\nmade-by: {made_by}\n"
            f"made-at: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    fd = os.open(os.path.join(path, OWNED), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, MODES[kind])  # ours, just made (the umask may have narrowed it)
    return True


def prepare(workdir: str, venv: str, digest: str, host: str, made_by: str) -> dict:
    """The first step of an install: the work directory and the venv made (or found to be the harness's); when the
    venv holds another bundle than `digest`, everything in it but its marker removed (the venv is made again).
    {"current": the venv holds this bundle, "made": [paths made]} or {"problem": one line}."""
    dirs = ((workdir, "workdir"), (venv, "venv"))
    problem = next((p for p in (owned_problem(d, kind) for d, kind in dirs) if p), None)
    if problem:  # both checked before either is made
        return {"problem": problem}
    try:
        made = [d for d, kind in dirs if make_owned(d, kind, host, made_by)]
        bundle = ""
        site = f"{venv}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages/{BUNDLE_MARKER}"
        if os.path.isfile(site) and not os.path.islink(site):
            with open(site, encoding="utf-8", errors="replace") as f:
                bundle = f.read(200).strip()
        if bundle != digest:
            with os.scandir(venv) as entries:
                for e in entries:
                    if e.name == OWNED:
                        continue
                    if e.is_dir(follow_symlinks=False):
                        shutil.rmtree(e.path)
                    else:
                        os.unlink(e.path)
    except NotOwned as err:
        return {"problem": str(err)}
    except OSError as err:
        return {"problem": f"making {err.filename or workdir} failed: {err.strerror or err}"}
    return {"current": bundle == digest, "made": made}


def cleanup_facts(workdir: str, venv: str) -> dict:
    """What `cleanup --hosts` may do: {"state": the work directory holds a journal, "workdir" / "venv": why it is not
    the harness's (None: it is, or does not exist), "harness": the venv holds a complete bundle}."""
    bundle = f"{venv}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages/{BUNDLE_MARKER}"
    return {"state": os.path.isdir(os.path.join(workdir, "state")), "workdir": owned_problem(workdir, "workdir"),
            "venv": owned_problem(venv, "venv"),
            "harness": os.access(f"{venv}/bin/python", os.X_OK) and os.path.isfile(bundle)}


def _cgroup_controllers() -> set[str]:
    found: set[str] = set()
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 3 and parts[2] == "cgroup":
                    found |= set(parts[3].split(","))
                elif len(parts) > 2 and parts[2] == "cgroup2":
                    try:
                        with open(os.path.join(parts[1], "cgroup.controllers"), encoding="utf-8") as c:
                            found |= {"blkio" if x == "io" else x for x in c.read().split()} | {"freezer"}
                    except OSError:
                        pass
    except OSError:
        pass
    return found


def host_checks(rocketmq_home: str | None = None, version: str | None = None, workdir: str | None = None,
                venv: str | None = None) -> dict:
    problems = [p for p in (workdir and owned_problem(workdir, "workdir"), venv and owned_problem(venv, "venv")) if p]
    root = os.geteuid() == 0
    if not root:
        problems.append("not root (a node's store is a loop mount and its cgroups need root): set ansible_become "
                        "or ansible_user root")
    if not os.path.exists("/dev/loop-control"):
        problems.append("no loop devices (/dev/loop-control is missing): a broker's store is a loop-mounted ext4")
    missing = [t for t in STORE_TOOLS if shutil.which(t) is None]
    if missing:
        problems.append(f"missing {', '.join(missing)} (e2fsprogs, util-linux, mount): a broker's store needs them")
    lacking = [c for c in CONTROLLERS if c not in _cgroup_controllers()]
    if lacking:
        problems.append(f"no cgroup controller {', '.join(lacking)} mounted: a node's cgroups need "
                        f"{', '.join(CONTROLLERS)}")
    if rocketmq_home is not None:
        mqbroker = os.path.join(rocketmq_home, "bin", "mqbroker")
        if not os.access(mqbroker, os.X_OK):
            problems.append(f"no Apache RocketMQ distribution at {rocketmq_home} (bin/mqbroker missing or not "
                            "executable): set rmq_chaos_rocketmq_home to one")
        elif version is not None:
            jars = os.listdir(os.path.join(rocketmq_home, "lib")) if os.path.isdir(
                os.path.join(rocketmq_home, "lib")) else []
            found = sorted({m.group(1) for j in jars if (m := re.match(r"^rocketmq-broker-(\d+\.\d+\.\d+)\.jar$", j))})
            if found != [version]:
                problems.append(f"the distribution at {rocketmq_home} is RocketMQ {', '.join(found) or 'unknown'}, "
                                f"not {version}")
        if shutil.which("java") is None:
            problems.append("no java on PATH: an Apache RocketMQ broker needs one")
    return {"python": f"{sys.version_info[0]}.{sys.version_info[1]}", "machine": platform.machine(), "root": root,
            "problems": problems}


def main(argv: list[str]) -> dict:
    """`check HOME VERSION WORKDIR VENV` ('-': none), `prepare WORKDIR VENV DIGEST HOST MADE_BY`, or
    `cleanup WORKDIR VENV`; the result as JSON on stdout."""
    mode, args = argv[0], [None if a == "-" else a for a in argv[1:]]
    if mode == "prepare":
        return prepare(*args)
    if mode == "cleanup":
        return cleanup_facts(*args)
    return host_checks(*args)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
