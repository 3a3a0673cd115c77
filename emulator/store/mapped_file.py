"""One fixed-size store file named by its 20-digit start offset, mapped read/write as RocketMQ's `MappedFile`:
messages are copied into the mapping (or into a transient-pool buffer committed to the file later), replicated bytes
are appended by a plain file write (4.9.1) or through the mapping (4.9.3+), flushes go through `fdatasync`."""
from __future__ import annotations

import os

from emulator.logs import store_log
from emulator.store.native import Mapping
from emulator.thread_dump import FILE_FORCE_FRAME, MSYNC_FRAME, native_call


def offset_to_name(offset: int) -> str:
    return f"{offset:020d}"


class MappedFile:
    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.file_size = size
        self.file_from_offset = int(os.path.basename(path))
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self.mapping = Mapping(fd, size)
        except OSError:
            os.close(fd)
            raise
        self.fd = fd
        self.write_buffer: Mapping | None = None  # a transient-pool buffer: the allocator's, once the file is made
        self.wrote = 0
        self.committed = 0
        self.flushed = 0
        self.store_timestamp = 0

    # --- positions -------------------------------------------------------------------------------------------
    @property
    def read_position(self) -> int:
        """Bytes readable through the file: written, or committed when a transient-pool buffer is in use."""
        return self.wrote if self.write_buffer is None else self.committed

    def is_full(self) -> bool:
        return self.wrote == self.file_size

    def remaining(self) -> int:
        return self.file_size - self.wrote

    # --- writing ---------------------------------------------------------------------------------------------
    def put(self, data: bytes | bytearray) -> None:
        """Append a message the broker encoded itself (CommitLog.doAppend): into the mapping or the write buffer."""
        target = self.write_buffer or self.mapping
        target.write(self.wrote, data)
        self.wrote += len(data)

    def append_by_file_write(self, data: bytes) -> bool:
        """4.9.1 `appendMessage(byte[])`: FileChannel.write at the write position; an error is logged, the write
        position advances anyway and the call reports success."""
        if self.wrote + len(data) > self.file_size:
            return False
        try:
            os.pwrite(self.fd, data, self.wrote)
        except OSError as e:
            store_log.error("Error occurred when append message to mappedFile. %s", e)
        self.wrote += len(data)
        return True

    def append_through_mapping(self, data: bytes) -> bool:
        """4.9.3+ `appendMessage(byte[])`: a copy into the mapping; a failed fault is caught and logged (the JVM's
        InternalError), the write position advances anyway."""
        if self.wrote + len(data) > self.file_size:
            return False
        try:
            self.mapping.write_checked(self.wrote, data)
        except OSError as e:
            store_log.error("Error occurred when append message to mappedFile. %s", e)
        self.wrote += len(data)
        return True

    def commit(self) -> int:
        """Copy written-but-uncommitted bytes of the write buffer into the file (FileChannel.write)."""
        if self.write_buffer is None:
            self.committed = self.wrote
            return self.committed
        end = self.wrote
        if end > self.committed:
            os.pwrite(self.fd, self.write_buffer.read(self.committed, end - self.committed), self.committed)
            self.committed = end
        return self.committed

    def flush(self) -> int:
        """Force what is readable to disk; returns the flushed position."""
        target = self.read_position
        if target > self.flushed:
            # the JVM: FileChannel.force for a file written through a transient-pool buffer, else MappedByteBuffer.force
            with native_call(FILE_FORCE_FRAME if self.write_buffer is not None else MSYNC_FRAME):
                os.fdatasync(self.fd)
            self.flushed = target
        return self.flushed

    # --- reading ---------------------------------------------------------------------------------------------
    def read(self, pos: int, size: int) -> bytes:
        return self.mapping.read(pos, size)

    def close(self) -> None:
        self.mapping.close()
        try:
            os.close(self.fd)
        except OSError:
            pass
