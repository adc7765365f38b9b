"""The files ctxlamp writes byte for byte are opened in binary mode, on every system.

Windows opens a file descriptor in text mode unless `os.O_BINARY` is given: each "\\n" written becomes
"\\r\\n" and a byte 26 read ends the file. The kept copies of transcripts (gzip) and the kept token counts
would break there, and a text layer on top would write the user's settings with "\\r\\r\\n". Linux has no
such mode, so here the flag is given Windows' own value (0x8000, which Linux reads as O_LARGEFILE, a no-op
on 64-bit systems) and every descriptor these writers and readers open must carry it.
"""
from __future__ import annotations

import logging
import os

import pytest

WINDOWS_O_BINARY = 0x8000


@pytest.fixture
def opened(monkeypatch):
    """The flags of every os.open, with O_BINARY as Windows has it."""
    monkeypatch.setattr(os, "O_BINARY", WINDOWS_O_BINARY, raising=False)
    seen: list[tuple[str, int]] = []
    real = os.open

    def recording(path, flags, *args, **kwargs):
        seen.append((os.fspath(path), flags))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording)
    return seen


def test_every_file_ctxlamp_writes_or_reads_byte_for_byte_is_opened_binary(opened, tmp_path):
    from service.claude.settings import _atomic_write
    from service.client.privdir import write_private
    from service.daemon.runtime import PrivateRotatingFileHandler
    from service.engine import TokenCounter
    from service.engine_setup import kept_counts
    from service.team.ownkey import load_or_make
    from service.team.passfile import _read_lines

    write_private(tmp_path / "copy.jsonl.gz", b"\x1f\x8b\n\x1a")
    counts = kept_counts.KeptCounts(TokenCounter(len), tmp_path / "counts.bin")
    counts.counter.count("a text")
    counts.save()
    assert kept_counts.read(tmp_path / "counts.bin")
    _atomic_write(tmp_path / "settings.json", '{\n  "a": 1\n}\n', 0o600)
    assert (tmp_path / "settings.json").read_bytes() == b'{\n  "a": 1\n}\n'
    load_or_make(tmp_path / "team")
    handler = PrivateRotatingFileHandler(tmp_path / "service.log")
    handler.emit(logging.LogRecord("t", logging.INFO, __file__, 1, "a line", None, None))
    handler.close()
    (tmp_path / "pgpass").write_bytes(b"host:5432:team:member:secret\r\n")
    assert _read_lines(tmp_path / "pgpass") == ["host:5432:team:member:secret"]

    ours = [(os.path.relpath(path, tmp_path), flags) for path, flags in opened
            if path.startswith(str(tmp_path)) and not os.path.isdir(path)]
    assert len(ours) >= 8, ours  # each writer's temp file, the counts read back, the key, the log, pgpass
    assert [(path, hex(flags)) for path, flags in ours if not flags & WINDOWS_O_BINARY] == []
