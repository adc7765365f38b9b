"""The token counts a service keeps for its next start (service/engine_setup/kept_counts.py).

What a start reads again was counted by the last run: those counts are used as they were written, and a
file that is not exactly what ctxlamp wrote for this o200k table is not used at all.
"""
from __future__ import annotations

import os

from hypothesis import given, settings, strategies as st

from service.engine import TokenCounter
from service.engine_setup import kept_counts
from service.engine_setup.tokenizer import encode_len


def _counted(*texts: str) -> TokenCounter:
    counter = TokenCounter(encode_len)
    for text in texts:
        counter.count(text)
    return counter


def _refusing() -> TokenCounter:
    def refuse(text: str) -> int:
        raise AssertionError(f"counted again: {text!r}")
    return TokenCounter(refuse)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.binary(min_size=16, max_size=16), st.integers(0, kept_counts.MAX_COUNT), max_size=50))
def test_counts_read_back_as_written(known):
    assert kept_counts.parse(kept_counts.dump(known)) == known


def test_a_start_counts_nothing_it_kept_and_gets_the_same_numbers(tmp_path):
    texts = ["def main():\n    return 1\n", "     1→# Überschrift\n     2→naïve café", "x" * 5000]
    first = _counted(*texts)
    path = kept_counts.path_in(tmp_path)
    keeper = kept_counts.KeptCounts(first, path)
    assert keeper.save()
    assert not keeper.save()  # nothing new counted since
    assert path.stat().st_mode & 0o777 == 0o600
    again = _refusing()
    assert kept_counts.KeptCounts(again, path).load() == len(texts)
    assert [again.count(t) for t in texts] == [first.count(t) for t in texts]


def test_a_file_not_exactly_as_written_is_not_used(tmp_path):
    path = kept_counts.path_in(tmp_path)
    kept_counts.KeptCounts(_counted("alpha", "beta gamma"), path).save()
    good = path.read_bytes()
    at = len(kept_counts.MAGIC) + 32 + 4 + 2 * 16  # the first count
    changed = good[:at] + (7).to_bytes(4, "little") + good[at + 4:]
    other_table = good[:len(kept_counts.MAGIC)] + bytes(32) + good[len(kept_counts.MAGIC) + 32:]
    for damaged in (good[:-1], good + b"\0", changed, other_table, b"", b"ctxlamp"):
        path.write_bytes(damaged)
        assert kept_counts.read(path) == {}
    path.write_bytes(good)
    assert len(kept_counts.read(path)) == 2


def test_a_link_planted_in_its_place_is_neither_read_nor_written_through(tmp_path):
    target = tmp_path / "elsewhere.bin"
    kept_counts.KeptCounts(_counted("alpha"), target).save()
    before = target.read_bytes()
    path = kept_counts.path_in(tmp_path)
    path.parent.mkdir(parents=True)
    os.symlink(target, path)
    assert kept_counts.read(path) == {}
    kept_counts.KeptCounts(_counted("beta", "gamma"), path).save()
    assert target.read_bytes() == before  # the link was replaced, not followed
    assert not path.is_symlink() and len(kept_counts.read(path)) == 2
