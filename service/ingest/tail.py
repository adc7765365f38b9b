"""Follow one transcript by byte offset.

Claude Code only appends. So a reader remembers how far it got and, on each
change, reads from there to the current end. A different inode (the file was
replaced) or a size below the offset (truncated) means the old bytes are no
longer the file's: the caller starts over from byte zero with a fresh engine.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

READ_CHUNK = 1 << 20  # at most this much per read, so a huge replay can interleave with other work


@dataclass
class Chunk:
    data: bytes
    restart: bool = False   # the bytes before `offset` are stale: start over
    missing: bool = False   # the file is gone
    more: bool = False      # there is more to read right now


class FileTail:
    def __init__(self, path: Path, offset: int = 0, inode: int | None = None) -> None:
        self.path = Path(path)
        self.offset = offset
        self.inode = inode

    def read(self, limit: int = READ_CHUNK) -> Chunk:
        """The bytes appended since the last read (at most `limit`)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:  # gone, or no longer readable: the lamp says no_transcript
            return Chunk(b"", missing=True)
        try:
            st = os.fstat(fd)
            restart = False
            if (self.inode is not None and st.st_ino != self.inode) or st.st_size < self.offset:
                restart = self.offset > 0 or (self.inode is not None and st.st_ino != self.inode)
                self.offset = 0
            self.inode = st.st_ino
            want = min(limit, st.st_size - self.offset)
            if want <= 0:
                return Chunk(b"", restart=restart)
            data = os.pread(fd, want, self.offset)
            self.offset += len(data)
            return Chunk(data, restart=restart, more=self.offset < st.st_size)
        finally:
            os.close(fd)
