"""transcript_file.chunks: whole files or pieces of the given size, nothing lost when the file grows."""
from __future__ import annotations

import os

from service.ingest.transcript_file import chunks


def test_pieces_are_whole_or_of_the_given_size(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"0123456789" * 2)
    assert list(chunks(path, 8)) == [b"01234567", b"89012345", b"6789"]
    assert list(chunks(path, 64)) == [b"0123456789" * 2]
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    assert list(chunks(empty, 64)) == []


def test_a_file_that_grows_while_read_is_read_to_its_end(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a" * 10)
    pieces = []
    for piece in chunks(path, 1 << 20):
        if not pieces:  # written after the first read
            with open(path, "ab") as fh:
                fh.write(b"b" * 5000)
        pieces.append(piece)
    assert b"".join(pieces) == b"a" * 10 + b"b" * 5000


def test_a_file_grown_before_the_first_read_is_read_whole(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a" * 10)
    real_read = os.read
    grown = []

    def read_after_growth(fd, n):
        if not grown:
            grown.append(True)
            with open(path, "ab") as fh:
                fh.write(b"c" * 3000)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", read_after_growth)
    assert b"".join(chunks(path, 1 << 20)) == b"a" * 10 + b"c" * 3000
