"""`MappedFileQueue`: the ordered files of one store directory (commitlog, or one consume queue), the file for an
offset, the last file (created on demand through the allocate service or directly), and flush/commit progress."""
from __future__ import annotations

import os
import threading

from emulator.logs import store_log
from emulator.store.allocate_service import AllocateMappedFileService
from emulator.store.mapped_file import MappedFile, offset_to_name


class MappedFileQueue:
    def __init__(self, store_path: str, file_size: int, allocator: AllocateMappedFileService | None = None) -> None:
        self.store_path = store_path
        self.file_size = file_size
        self.allocator = allocator
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        self.committed_where = 0
        self.store_timestamp = 0
        self._lock = threading.Lock()

    def load(self) -> bool:
        """Map the files already in the directory (start-up); a file of the wrong size stops the load."""
        if not os.path.isdir(self.store_path):
            return True
        names = sorted(n for n in os.listdir(self.store_path) if n.isdigit() and len(n) == 20)
        for name in names:
            path = os.path.join(self.store_path, name)
            if os.path.getsize(path) != self.file_size:
                store_log.warning("%s length not matched message store config value, please check it manually", path)
                return False
            mf = MappedFile(path, self.file_size)
            mf.wrote = mf.committed = mf.flushed = self.file_size
            self.files.append(mf)
            store_log.info("load %s OK", path)
        return True

    # --- lookup ----------------------------------------------------------------------------------------------
    def last(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    def first(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    def find(self, offset: int) -> MappedFile | None:
        files = self.files
        if not files:
            return None
        index = (offset // self.file_size) - (files[0].file_from_offset // self.file_size)
        if 0 <= index < len(files):
            return files[index]
        return None

    def min_offset(self) -> int:
        first = self.first()
        return first.file_from_offset if first else -1

    def max_offset(self) -> int:
        last = self.last()
        return last.file_from_offset + last.read_position if last else 0

    def max_wrote_offset(self) -> int:
        last = self.last()
        return last.file_from_offset + last.wrote if last else 0

    # --- creation --------------------------------------------------------------------------------------------
    def get_last_mapped_file(self, start_offset: int = 0, need_create: bool = True) -> MappedFile | None:
        last = self.last()
        create_offset = -1
        if last is None:
            create_offset = start_offset - (start_offset % self.file_size)
        elif last.is_full():
            create_offset = last.file_from_offset + self.file_size
        if create_offset == -1 or not need_create:
            return last
        next_path = os.path.join(self.store_path, offset_to_name(create_offset))
        next_next_path = os.path.join(self.store_path, offset_to_name(create_offset + self.file_size))
        mapped: MappedFile | None = None
        if self.allocator is not None:
            mapped = self.allocator.put_request_and_return(next_path, next_next_path, self.file_size)
        else:
            try:
                os.makedirs(self.store_path, exist_ok=True)
                mapped = MappedFile(next_path, self.file_size)
            except (OSError, ValueError) as e:  # ValueError: a path the OS cannot name (a NUL in a topic)
                store_log.error("create mappedFile exception %s", e)
        if mapped is not None:
            with self._lock:
                self.files.append(mapped)
        return mapped

    # --- flush / commit --------------------------------------------------------------------------------------
    def flush(self) -> bool:
        """Flush the file holding `flushed_where`; True when nothing moved (Java's `result`)."""
        mf = self.find(self.flushed_where) or (self.first() if self.flushed_where == 0 else None)
        if mf is None:
            return True
        ts = mf.store_timestamp
        where = mf.file_from_offset + mf.flush()
        unchanged = where == self.flushed_where
        self.flushed_where = where
        if ts:
            self.store_timestamp = ts
        return unchanged

    def commit(self) -> bool:
        mf = self.find(self.committed_where) or (self.first() if self.committed_where == 0 else None)
        if mf is None:
            return True
        where = mf.file_from_offset + mf.commit()
        unchanged = where == self.committed_where
        self.committed_where = where
        return unchanged

    def truncate_dirty(self, offset: int) -> None:
        """Recovery: files past `offset` are deleted, the file holding it ends there."""
        keep: list[MappedFile] = []
        for mf in self.files:
            end = mf.file_from_offset + self.file_size
            if end > offset:
                if offset >= mf.file_from_offset:
                    pos = offset - mf.file_from_offset
                    mf.wrote = mf.committed = mf.flushed = pos
                    keep.append(mf)
                else:
                    mf.close()
                    os.remove(mf.path)
                    store_log.info("delete dirty file %s", mf.path)
            else:
                keep.append(mf)
        self.files = keep

    def close(self) -> None:
        for mf in self.files:
            mf.close()
