"""The store's checked copy into a mapping where `process_vm_writev` is refused (EPERM: Docker's default seccomp
profile without CAP_SYS_PTRACE, as in the test image's containers): the kernel copies through a pipe instead, data
larger than a pipe arrives whole, and a fault that cannot be served comes back as EFAULT, not SIGBUS."""
from __future__ import annotations

import ctypes
import errno
import mmap

import pytest

from emulator.store import native


def test_a_refused_process_vm_writev_copies_through_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_vm_writev_refused", True)
    m = native.Mapping(-1, 1 << 20)
    data = bytes(range(256)) * 1000  # larger than a pipe's capacity
    m.write_checked(7, data)
    assert m.read(7, len(data)) == data
    m.close()


def test_a_fault_in_the_pipe_copy_is_an_errno() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    addr = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value)
    try:
        assert native._copy_through_pipe(addr, b"x" * 100) == (0, errno.EFAULT)
    finally:
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(4096))
