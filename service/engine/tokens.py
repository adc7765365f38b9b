"""Token counts at ingestion: o200k_base, cached by content hash.

Identical texts (a file read twice, a corpus of copies) are tokenized once.
The ratio to Claude's tokenizer is applied by the caller per model family.
"""
from __future__ import annotations

import hashlib
import math
from typing import Callable


# Texts remembered before the cache starts afresh: a long-lived service must not grow without bound
# (about 100 bytes an entry).
MAX_CACHED = 200_000
DIGEST_BYTES = 16  # a text's key: blake2b of its UTF-8


class TokenCounter:
    def __init__(self, encode_len: Callable[[str], int], use_cache: bool = True) -> None:
        self._encode_len = encode_len
        self._cache: dict[bytes, int] | None = {} if use_cache else None
        self.hits = 0
        self.misses = 0

    def count(self, text: str) -> int:
        """o200k token count of `text`."""
        if not text:
            return 0
        if self._cache is None:
            self.misses += 1
            return self._encode_len(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()
        n = self._cache.get(key)
        if n is None:
            self.misses += 1
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            n = self._cache[key] = self._encode_len(text)
        else:
            self.hits += 1
        return n

    def known(self) -> dict[bytes, int]:
        """A copy of the counts remembered (digest -> count), for a caller that keeps them between runs."""
        return dict(self._cache) if self._cache is not None else {}

    def learn(self, counts: dict[bytes, int]) -> None:
        """Counts of the same texts made earlier (service/engine_setup/kept_counts.py): the same numbers."""
        if self._cache is not None:
            room = MAX_CACHED - len(self._cache)
            self._cache.update(counts if len(counts) <= room else dict(list(counts.items())[:room]))

    def tok(self, text: str, ratio: float) -> int:
        """tok(text) = ceil(n_o200k(text) * ratio), as docs/measurement.md section 5 defines it."""
        n = self.count(text)
        return math.ceil(n * ratio) if n else 0
