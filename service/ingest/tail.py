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

from service.ingest.transcript_file import Skipped, open_fd

READ_CHUNK = 256 << 10  # at most this much per read, so a huge replay can interleave with other work


@dataclass
class Chunk:
    data: bytes
    restart: bool = False   # the bytes before `offset` are stale: start over
    missing: bool = False   # the file is gone
    more: bool = False      # there is more to read right now
    reason: str | None = None  # why it reads as missing when it is still there (a folder, a FIFO, no permission)


class FileTail:
    def __init__(self, path: Path, offset: int = 0, inode: int | None = None) -> None:
        self.path = Path(path)
        self.offset = offset
        self.inode = inode

    def read(self, limit: int = READ_CHUNK) -> Chunk:
        """The bytes appended since the last read (at most `limit`)."""
        try:
            fd, st = open_fd(self.path)
        except Skipped as exc:  # gone, or no longer a readable file: the lamp says no_transcript
            return Chunk(b"", missing=True, reason=None if exc.gone else exc.reason)
        try:
            restart = False
            if (self.inode is not None and st.st_ino != self.inode) or st.st_size < self.offset:
                restart = self.offset > 0 or (self.inode is not None and st.st_ino != self.inode)
                self.offset = 0
            self.inode = st.st_ino
            want = min(limit, st.st_size - self.offset)
            if want <= 0:
                return Chunk(b"", restart=restart)
            try:
                data = os.pread(fd, want, self.offset)
            except OSError as exc:  # EIO, ESTALE: the file's mount went away
                return Chunk(b"", missing=True, reason=f"read failed ({exc.strerror or exc})")
            self.offset += len(data)
            return Chunk(data, restart=restart, more=self.offset < st.st_size)
        finally:
            os.close(fd)
