"""o200k_base token counts for small amounts of text, without building tiktoken's encoder.

tiktoken spends 0.10-0.15 s of CPU turning the 200 000-entry table into its encoder
before it counts anything. A cold `ctxlamp report` counts about 1 MB of edits'
old_strings, less work than that build, so it counts them here with the same table
and the same split pattern (decision 43):
- the text is cut into pieces by o200k's pattern: Python's `re` with the pattern's
  ASCII reading when the text is ASCII, else the `regex` module (the splitter
  tiktoken's own Python code uses). `regex` may know a newer Unicode than
  tiktoken's compiled pattern, so a text with a character this Python's
  `unicodedata` does not know (an older Unicode still) is left to tiktoken;
- a piece that is a token counts 1; any other piece is merged pair by pair, the
  lowest-ranked pair first (the leftmost among equals), as tiktoken's byte-pair
  merge does, and counts its remaining parts.
tests/test_o200k_count.py compares the counts with tiktoken's on every code point
and on random text.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter

# o200k's pattern read over ASCII only: letters A-Z a-z, digits 0-9, and the Unicode
# White_Space characters below 0x80 (the Lt, Lm, Lo and M classes have none there).
_WS = rb"\t\n\x0b\x0c\r "
_CONTRACTION = rb"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
_ASCII_PIECES = re.compile(
    rb"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+" + _CONTRACTION
    + rb"|[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*" + _CONTRACTION
    + rb"|[0-9]{1,3}"
    + rb"| ?[^" + _WS + rb"A-Za-z0-9]+[\r\n/]*"
    + rb"|[" + _WS + rb"]*[\r\n]+"
    + rb"|[" + _WS + rb"]+(?![^" + _WS + rb"])"
    + rb"|[" + _WS + rb"]+").findall

# Merging is quadratic in a piece's length; longer pieces are left to tiktoken.
MAX_MERGED_PIECE = 256


class SmallTextCounter:
    """Counts with tiktoken's o200k table (`ranks`: token bytes -> rank) and its split pattern."""

    def __init__(self, ranks: dict[bytes, int], pat_str: str):
        import regex  # tiktoken's own dependency

        self.ranks = ranks
        self._unicode_pieces = regex.compile(pat_str).findall
        self._piece_counts: dict[bytes, int] = {}
        self._known_chars: set[str] = set()

    def count(self, text: str) -> int | None:
        """The o200k token count of `text`, or None when tiktoken must count it (see the module's doc)."""
        if text.isascii():
            pieces = Counter(_ASCII_PIECES(text.encode()))
        else:
            if not self._all_known(text):
                return None
            pieces = Counter(p.encode() for p in self._unicode_pieces(text))
        known = self._piece_counts
        if len(known) > 200_000:  # a long-lived process must not grow without bound
            known.clear()
        total = 0
        for piece, times in pieces.items():
            n = known.get(piece)
            if n is None:
                if piece in self.ranks:
                    n = 1
                elif len(piece) > MAX_MERGED_PIECE:
                    return None
                else:
                    n = merged_parts(piece, self.ranks)
                known[piece] = n
            total += n * times
        return total

    def _all_known(self, text: str) -> bool:
        """No unassigned code point (which tiktoken's tables may class otherwise) and no lone surrogate."""
        known = self._known_chars
        for ch in set(text).difference(known):
            if unicodedata.category(ch) in ("Cn", "Cs"):
                return False
            known.add(ch)
        return True


def merged_parts(piece: bytes, ranks: dict[bytes, int]) -> int:
    """How many tokens byte-pair merging leaves of `piece` (at least 2 bytes, not itself a token)."""
    get = ranks.get
    starts = list(range(len(piece) + 1))  # part k is piece[starts[k]:starts[k + 1]]
    pair_ranks = [get(piece[i:i + 2]) for i in range(len(piece) - 1)]  # pair k joins parts k and k + 1
    while True:
        best = best_at = None
        for k, r in enumerate(pair_ranks):
            if r is not None and (best is None or r < best):
                best, best_at = r, k
        if best_at is None:
            return len(starts) - 1
        k = best_at
        del starts[k + 1]
        del pair_ranks[k]
        if k < len(pair_ranks):
            pair_ranks[k] = get(piece[starts[k]:starts[k + 2]])
        if k > 0:
            pair_ranks[k - 1] = get(piece[starts[k - 1]:starts[k + 1]])
