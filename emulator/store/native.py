"""Foreign calls that release the GIL while the kernel works, so a page fault that blocks (frozen, throttled, swapped
out, read-only store) stops only the thread that touched the page, as in the JVM: `memmove` into a mapping, and
`process_vm_writev` into our own mapping, whose failed fault comes back as an errno instead of SIGBUS (the way the
JVM turns a fault in a mapped-buffer copy into an `InternalError` the store catches and logs). Where that call is
refused (EPERM: Docker's default seccomp profile allows it only with CAP_SYS_PTRACE, so in the test image's
containers) the kernel copies through a pipe instead (`read(2)` into the mapping), with the same errno on a fault.

Every copy into or out of a `Mapping` is Java code to the JVM's safepoint mechanism (`emulator.safepoint`): a copy
stuck in a page fault keeps the whole process from reaching its next safepoint."""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import mmap
import os

from emulator.safepoint import VM_STATE

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_process_vm_writev = _libc.process_vm_writev
_process_vm_writev.restype = ctypes.c_ssize_t
_process_vm_writev.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.POINTER(_IoVec),
                               ctypes.c_ulong, ctypes.c_ulong]
_PID = os.getpid()
_read = _libc.read
_read.restype = ctypes.c_ssize_t
_read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
PIPE_CHUNK = 1 << 16
"""A pipe's default capacity; the pipe is non-blocking, so a smaller one takes what fits and that is read first."""
_vm_writev_refused = False

memmove = ctypes.memmove
string_at = ctypes.string_at
memset = ctypes.memset


class Mapping:
    """A shared read/write mapping of `size` bytes of `fd` (or anonymous memory when fd is -1), with its address."""

    def __init__(self, fd: int, size: int) -> None:
        if fd < 0:
            self.mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        else:
            self.mm = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self._anchor = ctypes.c_char.from_buffer(self.mm)
        self.addr = ctypes.addressof(self._anchor)
        self.size = size

    def write(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        """Copy into the mapping; a fault that cannot be served kills the process (SIGBUS), as a raw JVM copy can."""
        src = data if isinstance(data, bytes) else (ctypes.c_char * len(data)).from_buffer(data)
        VM_STATE.enter_copy()
        try:
            memmove(self.addr + pos, src, len(data))
        finally:
            VM_STATE.leave_copy()

    def write_checked(self, pos: int, data: bytes) -> None:
        """Copy into the mapping through the kernel; a failed fault raises OSError (EFAULT) instead of SIGBUS."""
        src = _IoVec(ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p), len(data))
        dst = _IoVec(self.addr + pos, len(data))
        global _vm_writev_refused
        VM_STATE.enter_copy()
        try:
            done = -1 if _vm_writev_refused else _process_vm_writev(_PID, ctypes.byref(src), 1, ctypes.byref(dst),
                                                                     1, 0)
            err = ctypes.get_errno() if done < 0 else 5
            if done < 0 and (_vm_writev_refused or err == errno.EPERM):
                _vm_writev_refused = True
                done, err = _copy_through_pipe(self.addr + pos, data)
        finally:
            VM_STATE.leave_copy()
        if done != len(data):
            raise OSError(err, f"write into mapping failed: {os.strerror(err)}")

    def read(self, pos: int, size: int) -> bytes:
        VM_STATE.enter_copy()
        try:
            return string_at(self.addr + pos, size)
        finally:
            VM_STATE.leave_copy()

    def close(self) -> None:
        del self._anchor
        try:
            self.mm.close()
        except BufferError:
            pass


def _copy_through_pipe(addr: int, data: bytes) -> tuple[int, int]:
    """Copy `data` to `addr` by the kernel: each chunk written into a pipe, then `read(2)` into the mapping (a fault
    that cannot be served ends the read with EFAULT or short). Returns (bytes copied, errno of a failure)."""
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)
        done = 0
        while done < len(data):
            put = os.write(w, data[done:done + PIPE_CHUNK])
            got = _read(r, addr + done, put)
            if got != put:
                return done + max(got, 0), ctypes.get_errno() if got < 0 else errno.EIO
            done += got
        return done, 0
    finally:
        os.close(r)
        os.close(w)
