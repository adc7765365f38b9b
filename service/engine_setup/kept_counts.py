"""The token counts a service counted, kept for its next start (decision 504).

A start reads every live session again from byte zero, and counting what Read, Write and Edit put in the
context is most of that work: 0.2 s of CPU and the Python counter's 34 MB (its table and pattern) for the
12 recent sessions of a real history. The counter already knows each text by a digest of its content
(`TokenCounter`); keeping those counts in the data folder lets the next start count only what is new, and
build the counter only if something is. The file is read as bytes, never unpickled or unmarshalled, and
refused whole unless its layout, o200k table and checksum match: a count is exact or it is not used.

Layout: MAGIC, a sha256 of o200k's table and split pattern (32 bytes), the number of counts (4 bytes,
little-endian), that many 16-byte digests, as many counts (4 bytes each, little-endian), and a blake2b
checksum of all that (16 bytes): a file damaged on the disk is counted afresh.
"""
from __future__ import annotations

import array
import hashlib
import logging
import os
import sys
from pathlib import Path

from service.client.privdir import open_own, write_private
from service.engine import TokenCounter
from service.engine.tokens import DIGEST_BYTES, MAX_CACHED
from service.engine_setup.o200k_count import O200K_PATTERN
from service.engine_setup.tokenizer import O200K_SHA256

NAME = "o200k-counts.bin"
MAGIC = b"ctxlamp o200k counts 1\n"
# The counts' source: o200k's table and the pattern that splits texts before its merges.
_TABLE = hashlib.sha256(f"{O200K_SHA256}\n{O200K_PATTERN}".encode()).digest()
_HEAD = len(MAGIC) + len(_TABLE) + 4
_SUM = 16
# A count above this is not one a transcript's line can hold (lines are at most 256 MiB).
MAX_COUNT = 1 << 30

log = logging.getLogger("ctxlamp.tokens")


def path_in(data: Path) -> Path:
    return data / "cache" / NAME


def read(path: Path) -> dict[bytes, int]:
    """digest -> count from `path`; empty when it is missing, another layout or table, or damaged."""
    try:
        fd = open_own(path, os.O_RDONLY)  # a planted link is not ours
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(_HEAD + MAX_CACHED * (DIGEST_BYTES + 4) + _SUM + 1)
    except OSError:
        return {}
    return parse(data)


def parse(data: bytes) -> dict[bytes, int]:
    data, checksum = data[:-_SUM], data[-_SUM:]
    if _checksum(data) != checksum or data[:len(MAGIC) + len(_TABLE)] != MAGIC + _TABLE:
        return {}
    n = int.from_bytes(data[_HEAD - 4:_HEAD], "little")
    if n > MAX_CACHED or len(data) != _HEAD + n * (DIGEST_BYTES + 4):
        return {}
    counts = array.array("I", data[_HEAD + n * DIGEST_BYTES:])
    if counts.itemsize != 4:
        return {}
    if sys.byteorder != "little":
        counts.byteswap()
    if n and max(counts) > MAX_COUNT:
        return {}
    starts = range(_HEAD, _HEAD + n * DIGEST_BYTES, DIGEST_BYTES)
    return {data[at:at + DIGEST_BYTES]: count for at, count in zip(starts, counts)}


def dump(known: dict[bytes, int]) -> bytes:
    items = [(k, n) for k, n in known.items() if len(k) == DIGEST_BYTES and 0 <= n <= MAX_COUNT][:MAX_CACHED]
    counts = array.array("I", [n for _, n in items])
    if sys.byteorder != "little":
        counts.byteswap()
    data = b"".join([MAGIC, _TABLE, len(items).to_bytes(4, "little"), *(k for k, _ in items), counts.tobytes()])
    return data + _checksum(data)


def _checksum(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=_SUM).digest()


_taught: set[str] = set()  # the files whose counts this process's counter has (one start, many reports)


def learn_once(path: Path) -> int:
    """Teach this process's counter (`shared_counter`) the counts kept in `path`, unless it has them: a
    report run alone counts only what the service did not; one the service builds finds them taught."""
    from service.engine_setup.engines import shared_counter

    return 0 if str(path) in _taught else KeptCounts(shared_counter(), path).load()


class KeptCounts:
    """One counter's counts, read at a start and written again when it has counted something new."""

    def __init__(self, counter: TokenCounter, path: Path) -> None:
        self.counter, self.path = counter, path
        self._saved_at = -1

    def load(self) -> int:
        """Teach the counter the kept counts; how many."""
        known = read(self.path)
        self.counter.learn(known)
        _taught.add(str(self.path))
        self._saved_at = self.counter.misses
        if known:
            log.info("token counts: %d known from the last run", len(known))
        return len(known)

    def save(self) -> bool:
        """Write the counter's counts if it counted anything since they were read or last written."""
        if self.counter.misses == self._saved_at:
            return False
        misses = self.counter.misses
        try:
            write_private(self.path, dump(self.counter.known()), durable=False)  # rebuilt by counting again
        except OSError as exc:
            log.warning("token counts not kept: %s", exc)
            return False
        self._saved_at = misses
        return True
