"""The Python o200k counter gives tiktoken's counts, or hands the text back; encode_len builds tiktoken's
encoder only for a text the counter hands back."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

from service.engine_setup import tokenizer as ts
from tests.support.o200k import tiktoken_len  # the fixtures `encoding` and `small` come from there too (conftest)
from tests.support.corpus import ROOT


def test_every_assigned_code_point_counts_as_tiktoken_counts_it(encoding, small):
    """Each character this Python knows, in the contexts o200k's pattern tells apart (letters of
    either case, contractions, digits, spaces and line ends before and after it)."""
    mismatched = []
    for cp in range(0x110000):
        ch = chr(cp)
        if unicodedata.category(ch) in ("Cn", "Cs"):
            continue
        text = f"{ch}a A{ch}'s 1{ch}2 x{ch} \n{ch}{ch}\t"
        if small.count(text) != tiktoken_len(encoding, text):
            mismatched.append(hex(cp))
    assert mismatched == []


_PROCESS = """
import json, sys
from service.engine_setup import tokenizer as ts
texts = json.loads(sys.stdin.read())
counts = [ts.encode_len(t) for t in texts]
print(json.dumps({"counts": counts, "tiktoken_built": ts._encoding is not None}))
"""


def _encode_len_in_a_fresh_process(home: Path, texts: list[str]) -> dict:
    env = {**os.environ, "CTXLAMP_HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROCESS], input=json.dumps(texts), capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_very_first_run_counts_with_the_table_the_install_shipped(tmp_path, encoding):
    """An empty data folder (a user's first run): the table built at install time serves at once."""
    assert ts.shipped_table() is not None, "resources/o200k_base.sorted.marshal is built by `make` and by setup.py"
    texts = ["def f(x):\n    return x  # naïve → 🎯\n", "plain words " * 50]
    first = _encode_len_in_a_fresh_process(tmp_path / "home", texts)
    assert first == {"counts": [tiktoken_len(encoding, t) for t in texts], "tiktoken_built": False}
    assert not (tmp_path / "home").exists() or not list((tmp_path / "home").rglob(ts.FAST_NAME))


def test_encode_len_counts_any_amount_without_building_tiktoken(tmp_path, encoding):
    """Each process that built the encoder paid 0.25-0.3 s and 76 MB for it; the Python counter gives the same
    numbers at tiktoken's pace (decision 490), so counting builds it only for a text the counter hands back."""
    home = tmp_path / "home"
    ts.ensure_o200k_cache(home / "tiktoken")  # the set-up a first run leaves: the file and our parsed table
    ts._save_table(home / "tiktoken", encoding)
    texts = ["def f(x):\n    return x  # naïve → 🎯\n", "", "<|endoftext|>", "plain words " * 50,
             "x = 1\n" * 400_000, "     1→naïve → 🎯 Ünïcödé 𝐀𐐨 日本語\n" * 20_000]
    assert _encode_len_in_a_fresh_process(home, texts) == {
        "counts": [tiktoken_len(encoding, t) for t in texts], "tiktoken_built": False}

    unassigned = next(chr(cp) for cp in range(0x10000, 0x110000) if unicodedata.category(chr(cp)) == "Cn")
    handed_back = [*texts[:2], f"word {unassigned}"]  # a character this Python's Unicode does not know
    assert _encode_len_in_a_fresh_process(home, handed_back) == {
        "counts": [tiktoken_len(encoding, t) for t in handed_back], "tiktoken_built": True}
