"""o200k as the counter tests use it: tiktoken's encoding (loaded once per module) and the Python counter
for small texts built from it (fixtures every test can ask for: tests/conftest.py loads this module)."""
from __future__ import annotations

import pytest

from service.engine_setup import tokenizer as ts
from service.engine_setup.o200k_count import O200kCounter


@pytest.fixture(scope="module")
def encoding(tmp_path_factory):
    return ts.load_o200k(tmp_path_factory.mktemp("tiktoken"))


@pytest.fixture(scope="module")
def small(encoding):
    return O200kCounter(encoding._mergeable_ranks, encoding._pat_str)


def tiktoken_len(encoding, text: str) -> int:
    return len(encoding.encode_ordinary(text))
