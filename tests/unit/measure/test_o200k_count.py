"""The Python o200k counter gives tiktoken's counts, or hands back a text with a character it does not know."""
from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from service.engine_setup import o200k_count
from service.engine_setup.o200k_count import HEAP_FROM, O200K_PATTERN, O200kCounter, SortedRanks, merged_parts
from tests.support.o200k import tiktoken_len  # the fixtures `encoding` and `small` come from there too (conftest)
from tests.support.corpus import all_transcripts, needs_real_fixtures, REAL_FIXTURES
from tests.support.transcripts import read_jsonl


def test_every_pair_of_ascii_characters_counts_as_tiktoken_counts_it(encoding, small):
    mismatched = []
    for a in map(chr, range(128)):
        for b in map(chr, range(128)):
            text = f"{a}{b}x {a}{b}\n{b}{a}1 {a}"
            if small.count(text) != tiktoken_len(encoding, text):
                mismatched.append((a, b))
    assert mismatched == []


def test_unassigned_code_points_and_lone_surrogates_are_left_to_tiktoken(small):
    unassigned = next(chr(cp) for cp in range(0x10000, 0x110000) if unicodedata.category(chr(cp)) == "Cn")
    assert small.count(f"word {unassigned}") is None
    assert small.count(json.loads('"broken \\ud800 pair"')) is None


def test_long_pieces_count_as_tiktoken_counts_them(encoding, small):
    """Past HEAP_FROM bytes the merge takes its pairs from a heap: the same parts as the scan, and as tiktoken."""
    cjk = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(400))  # one piece of 1200 bytes, no token
    for text in (cjk, "x" * 5000, "=-" * 3000, "aé" * 700, "0" * 3, "ab" * (HEAP_FROM // 2)):
        assert small.count(text) == tiktoken_len(encoding, text), text[:20]


def test_a_piece_past_the_merge_limit_is_left_to_tiktoken(encoding, small, monkeypatch):
    """Merging holds about 60 bytes a byte of the piece: a run megabytes long goes to tiktoken, as before."""
    monkeypatch.setattr(o200k_count, "MAX_MERGED_PIECE", 1000)
    counter = O200kCounter(encoding._mergeable_ranks, encoding._pat_str)  # nothing remembered yet
    assert counter.count("word " + "qz" * 600) is None
    assert counter.count("word " + "qz" * 400) == tiktoken_len(encoding, "word " + "qz" * 400)


_PIECE_PARTS = st.sampled_from([b"a", b"b", b"ab", b"th", b"e", b" ", b"\xe2\x86\x92", b"in", b"g", b"=", b"\xff"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE_PARTS, min_size=2, max_size=120).map(b"".join))
def test_the_heap_merge_leaves_the_parts_the_scan_and_tiktoken_leave(encoding, piece):
    """Random pieces full of rank ties, short and long: the two merges and tiktoken's agree."""
    ranks = encoding._mergeable_ranks
    expected = len(encoding._encode_single_piece(piece))  # byte-pair merging alone, no split
    assert o200k_count._merged_parts_by_heap(piece, ranks.get) == expected
    assert o200k_count._merged_parts_by_scan(piece, ranks.get) == expected
    assert merged_parts(piece, ranks.get) == expected


_CODE_LIKE = st.sampled_from(["def ", "return", " self", "'s", "'LL", "'Re", "\r\n", "\n\n", "  ", "\t", "123456",
                              "//", "/*", "*/", "{", "}", "()", "→", "—", "é", "ß", "日本語", "🎯", "\u0301", "ǅ",
                              "Ⅻ", "\u00a0", "\u2028", "\x1c", "\x85", " ", "x", "X", "_", "==", "\x0b", "\x0c", "\r"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(_CODE_LIKE, max_size=60).map("".join)))
def test_random_text_counts_as_tiktoken_counts_it(encoding, small, text):
    n = small.count(text)
    if n is None:  # only for what the counter declines
        assert any(unicodedata.category(c) in ("Cn", "Cs") for c in text)
    else:
        assert n == tiktoken_len(encoding, text)


_LINE_STARTS = st.sampled_from(["\n", "\r\n", "\n\n", " ", "\t", "/", ";", "a", "A", "'s", "'ſ", "1", "→", "é",
                                "\u0301", "\u00a0", "\x85", "ſ", "日", "ǅ", "Ⅻ", "\u2028", "🎯", "𝐀", "𐐨", "𝟙"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_LINE_STARTS, min_size=1, max_size=40).map("".join))
def test_text_outside_ascii_is_split_into_tiktokens_own_pieces(small, text):
    """Not only the counts: the pieces themselves, by the pattern over str and through stand-ins (where lines
    start, around the stand-ins, beyond the Basic Multilingual Plane)."""
    import regex

    text += "→"  # outside ASCII
    expected = [p.encode() for p in regex.findall(O200K_PATTERN, text)]
    assert small._mixed_pieces(text) == expected
    assert [p if isinstance(p, bytes) else p.encode() for p in small.pieces_outside_ascii(text)] == expected


def _texts_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts_in(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts_in(v)]
    return []


def _sorted_ranks(encoding) -> SortedRanks:
    tokens = sorted(encoding._mergeable_ranks)
    return SortedRanks(tokens, [encoding._mergeable_ranks[t] for t in tokens])


def test_the_sorted_table_answers_as_the_dict_before_and_after_it_becomes_one(encoding, monkeypatch):
    table = encoding._mergeable_ranks
    strangers = [t + b"\xff\xfe" for t in list(table)[::97]] + [b"", b"\x00" * 9, b"\xff" * 3]
    monkeypatch.setattr(SortedRanks, "DICT_AFTER", len(table) // 2)
    ranks = _sorted_ranks(encoding)
    early_get = ranks.get
    got = {t: ranks.get(t) for t in table}
    assert got == table and ranks.table is not None  # the second half was answered by the dict
    assert all(ranks.get(t) is None and early_get(t) is None for t in strangers)
    assert early_get(b"hello") == table[b"hello"]


@pytest.mark.parametrize("source", ["fixtures", pytest.param("third-party", marks=needs_real_fixtures)])
@pytest.mark.parametrize("lookup", ["dict", "sorted"])
def test_every_text_of_the_real_transcripts_counts_as_tiktoken_counts_it(encoding, lookup, source):
    small = O200kCounter(encoding._mergeable_ranks if lookup == "dict" else _sorted_ranks(encoding),
                             encoding._pat_str)
    paths = all_transcripts() if source == "fixtures" else sorted(REAL_FIXTURES.rglob("*.jsonl"))
    texts = {t for path in paths for entry in read_jsonl(path) for t in _texts_in(entry)}
    assert len(texts) > 1000
    declined = [t for t in texts if small.count(t) is None]
    wrong = [t[:80] for t in texts if (n := small.count(t)) is not None and n != tiktoken_len(encoding, t)]
    assert wrong == []
    assert len(declined) < len(texts) / 100
