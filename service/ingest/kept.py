"""Compressed copies of the transcripts the service has read, for when Claude Code deletes them.

Claude Code deletes transcripts older than its `cleanupPeriodDays` (30 by default). The service
keeps a gzip copy of each one it has read under its data folder (`transcripts/`), in the same
tree and under the same name as in Claude Code's `projects/`, so a copy is read exactly as its
original was (the same session id from its name, the same project from its folder). The copies
are written once the service is idle, each when its transcript has not changed for a while;
the live lamp follows the real file, and a copy is read only once the real one is gone
(`service/report/scan.py`'s discover, `ctxlamp replay`). `index.json` says which `projects/`
folder the copies mirror and the size and time of each original when it was copied.
"""
from __future__ import annotations

import logging
import os
import time
import zlib
from pathlib import Path
from typing import Iterable, Iterator

import orjson

from service.client.privdir import write_private
from service.ingest.transcript_file import Skipped, chunks

log = logging.getLogger("ctxlamp.kept")

FOLDER = "transcripts"  # under the service's data folder
INDEX = "index.json"
LEVEL = 6  # zlib's default: about a fifth of a transcript's size, 0.9 s of CPU for 51 MB (benchmarks.md)
QUIET_S = 300.0  # a transcript is copied once it has not changed for this long (the first pass copies all)
GZIP_MAGIC = b"\x1f\x8b"
_PIECE = 4 << 20


def folder_of(data: Path) -> Path:
    return Path(data) / FOLDER


def read_index(kept: Path) -> dict:
    """{"root": the projects/ folder mirrored, "files": {relative path: [size, mtime_ns, kept bytes]}}."""
    try:
        doc = orjson.loads((Path(kept) / INDEX).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {"root": None, "files": {}}
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        return {"root": None, "files": {}}
    return doc


def mirrors(kept: Path, projects: Path) -> bool:
    """Whether the copies under `kept` are of the transcripts under `projects`."""
    root = read_index(kept).get("root")
    return isinstance(root, str) and os.path.realpath(root) == os.path.realpath(projects)


def kept_path(kept: Path, projects: Path, transcript: str | Path) -> Path | None:
    """Where the copy of `transcript` (a file under `projects`) is, whether or not it exists."""
    rel = os.path.relpath(os.path.abspath(transcript), os.path.abspath(projects))
    if rel.startswith(os.pardir) or os.path.isabs(rel):
        return None
    return Path(kept) / rel


def readable(path: str | Path, kept: Path, projects: Path) -> str:
    """`path` while it exists; else its kept copy when there is one (the copy serves only then)."""
    if os.path.lexists(path) or not mirrors(kept, projects):
        return str(path)
    copy = kept_path(kept, projects, path)
    return str(copy) if copy is not None and copy.is_file() else str(path)


def read_chunks(path: str | Path, size: int) -> Iterator[bytes]:
    """A transcript's bytes in pieces (transcript_file's rules), a kept copy's decompressed on the way.

    A transcript is JSON lines: it never starts with gzip's magic bytes, which every copy does.
    """
    pieces = chunks(path, size)
    first = next(pieces, b"")
    if not first.startswith(GZIP_MAGIC):
        if first:
            yield first
        yield from pieces
        return
    inflate = zlib.decompressobj(wbits=31)
    for piece in _chain(first, pieces):
        data = inflate.decompress(piece, size)
        while data:
            yield data
            data = inflate.decompress(inflate.unconsumed_tail, size) if inflate.unconsumed_tail else b""
    rest = inflate.flush()
    if rest:
        yield rest


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def compress(path: str | Path, level: int = LEVEL) -> bytes:
    """The gzip of a transcript, read piece by piece (Skipped when it cannot be read)."""
    deflate = zlib.compressobj(level, zlib.DEFLATED, 31)
    out = [deflate.compress(piece) for piece in chunks(path, _PIECE)]
    out.append(deflate.flush())
    return b"".join(out)


def keep(paths: Iterable[str], projects: Path, kept: Path, *, quiet_s: float = QUIET_S,
         now: float | None = None, level: int = LEVEL) -> tuple[int, int, int]:
    """Copy each transcript of `paths` (files under `projects`) that changed since its copy was made and has
    not changed for `quiet_s` seconds; (files copied, bytes written, files waiting to be quiet). Copies of
    another projects/ folder are replaced: the copies mirror one folder, the user's."""
    index = read_index(kept)
    if not mirrors(kept, projects):
        index = {"root": os.path.abspath(projects), "files": {}}
    files: dict = index["files"]
    now = time.time() if now is None else now
    copied = written = waiting = 0
    for path in paths:
        target = kept_path(kept, projects, path)
        if target is None:
            continue
        rel = os.path.relpath(target, kept)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if files.get(rel, [None, None])[:2] == [st.st_size, st.st_mtime_ns] and target.is_file():
            continue
        if now - st.st_mtime < quiet_s:
            waiting += 1  # still being written: copied once it is quiet
            continue
        try:
            data = compress(path, level)
        except (Skipped, OSError):
            continue
        write_private(target, data, durable=False)
        files[rel] = [st.st_size, st.st_mtime_ns, len(data)]
        copied += 1
        written += len(data)
    if copied or not (Path(kept) / INDEX).exists():
        write_private(Path(kept) / INDEX, orjson.dumps(index), durable=False)
    return copied, written, waiting


def kept_size(kept: Path) -> tuple[int, int]:
    """(copies, bytes on disk) of the kept copies."""
    rows = [v for v in read_index(kept)["files"].values() if isinstance(v, list) and len(v) == 3 and isinstance(v[2], int)]
    return len(rows), sum(v[2] for v in rows)


def not_kept(paths: Iterable[str], projects: Path, kept: Path) -> list[str]:
    """The transcripts of `paths` with no up-to-date copy (what a cleanup would lose)."""
    files = read_index(kept)["files"] if mirrors(kept, projects) else {}
    out = []
    for path in paths:
        target = kept_path(kept, projects, path)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if target is None or files.get(os.path.relpath(target, kept), [None, None])[:2] != [st.st_size, st.st_mtime_ns]:
            out.append(str(path))
    return out
