"""o200k_base token counts for small amounts of text, without building tiktoken's encoder.

tiktoken spends 0.10-0.15 s of CPU turning the 200 000-entry table into its encoder
before it counts anything. A cold `ctxlamp report` counts about 1 MB of edits'
old_strings, less work than that build, so it counts them here with the same table
and the same split pattern:
- the text is cut into pieces by o200k's pattern, written out below for Python's
  `re` over bytes. The pattern sees a character only through its classes (letter of
  which case, mark, number, white space, other), so a character outside ASCII is
  read as a stand-in byte for its class, found with `unicodedata`. A character
  this Python's Unicode does not know (tiktoken's may class it), or a lone
  surrogate, leaves the text to tiktoken;
- the stand-ins cost a slice per piece, so a text is first cut where a piece always
  ends: after a line break followed by spaces or tabs and a visible ASCII character
  (with none between, that character must not be "/", which o200k can attach to a
  line break). Only the lines holding other characters go through stand-ins;
- a piece that is a token counts 1; any other piece is merged pair by pair, the
  lowest-ranked pair first (the leftmost among equals), as tiktoken's byte-pair
  merge does, and counts its remaining parts.
tests/integration/measure/test_o200k_count.py compares the counts with tiktoken's on every code point
and on random text.
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from itertools import accumulate
from typing import Callable, Sequence

# The pattern tiktoken's o200k_base splits with; the counter refuses any other.
O200K_PATTERN = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])

# Stand-in bytes for characters outside ASCII, by Unicode general category.
_MARK, _UPPER_ONLY, _LOWER_ONLY, _EITHER_CASE, _NUMBER, _SPACE, _OTHER, _LONG_S = (chr(b) for b in range(0x80, 0x88))
_STAND_IN = {"Mn": _MARK, "Mc": _MARK, "Me": _MARK, "Lu": _UPPER_ONLY, "Lt": _UPPER_ONLY, "Ll": _LOWER_ONLY,
             "Lm": _EITHER_CASE, "Lo": _EITHER_CASE, "Nd": _NUMBER, "Nl": _NUMBER, "No": _NUMBER,
             "Zs": _SPACE, "Zl": _SPACE, "Zp": _SPACE}
# U+0085 is White_Space though a control character; U+017F (long s) ends a contraction as "s" does
# (o200k's contractions ignore case, and it is the only non-ASCII character folding to one of their letters).
_SPECIAL = {"\x85": _SPACE, "\u017f": _LONG_S}

# o200k's pattern over ASCII and the stand-ins: letters [A-Za-z] and 81-83, 87 (upper-case set
# also 80 (marks), lower-case set also 80), numbers [0-9] and 84, White_Space: tab to CR, space, 85.
_WS = rb"\t\n\x0b\x0c\r \x85"
_UP = rb"A-Z\x80\x81\x83"
_LOW = rb"a-z\x80\x82\x83\x87"
_LN = rb"A-Za-z\x81\x82\x83\x870-9\x84"  # letters and numbers
_CONTRACTION = rb"(?:'[sS\x87]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
_PIECES = re.compile(
    rb"[^\r\n" + _LN + rb"]?[" + _UP + rb"]*[" + _LOW + rb"]+" + _CONTRACTION
    + rb"|[^\r\n" + _LN + rb"]?[" + _UP + rb"]+[" + _LOW + rb"]*" + _CONTRACTION
    + rb"|[0-9\x84]{1,3}"
    + rb"| ?[^" + _WS + _LN + rb"]+[\r\n/]*"
    + rb"|[" + _WS + rb"]*[\r\n]+"
    + rb"|[" + _WS + rb"]+(?![^" + _WS + rb"])"
    + rb"|[" + _WS + rb"]+").findall

# Where a piece always ends: after a line break, before [ \t]* and a visible ASCII character
# (not "/" right after the break). Reading the parts apart gives the same pieces.
_LINES = re.compile(r"(?<=\n)(?=[ \t]+[!-~]|[!-.0-~])").split

# Merging is quadratic in a piece's length; longer pieces are left to tiktoken.
MAX_MERGED_PIECE = 256


class SortedRanks:
    """o200k's table (token bytes -> rank) as a sorted list, searched by bisection until hashing it pays.

    Unmarshalling the 200 000-entry dict costs 30-50 ms of CPU; the sorted list loads in
    6 ms and answers a lookup in about 0.6 us (the dict: 0.05 us). A cold report looks up
    a few thousand pieces, its old_strings repeat, so the list wins there; after
    DICT_AFTER lookups `get` becomes the dict's own.
    """

    DICT_AFTER = 20_000

    def __init__(self, tokens: list[bytes], ranks: Sequence[int]):
        self.tokens, self.ranks = tokens, ranks  # tokens sorted; ranks[i] is the rank of tokens[i]
        self.lookups = 0
        self.table: dict[bytes, int] | None = None
        self.get: Callable[[bytes], int | None] = self._search

    def _search(self, piece: bytes) -> int | None:
        if self.table is not None:  # a caller that took `get` before it became the dict's
            return self.table.get(piece)
        self.lookups += 1
        if self.lookups > self.DICT_AFTER:
            self.table = self.as_dict()
            self.get = self.table.get
        i = bisect_left(self.tokens, piece)
        return self.ranks[i] if i < len(self.tokens) and self.tokens[i] == piece else None

    def as_dict(self) -> dict[bytes, int]:
        return dict(zip(self.tokens, self.ranks))


class SmallTextCounter:
    """Counts with tiktoken's o200k table and its split pattern.

    `ranks` maps token bytes to ranks through `.get` (a dict or a SortedRanks);
    `pat_str` must be o200k's pattern, else every text is left to tiktoken.
    """

    def __init__(self, ranks: dict[bytes, int] | SortedRanks, pat_str: str):
        self.ranks = ranks
        self.usable = pat_str == O200K_PATTERN
        self._piece_counts: dict[bytes, int] = {}
        self._stand_ins: dict[int, str] = {}  # code point -> stand-in, for the characters met so far

    def count(self, text: str) -> int | None:
        """The o200k token count of `text`, or None when tiktoken must count it (see the module's doc)."""
        if not self.usable:
            return None
        pieces: Counter[bytes] | None
        if text.isascii():
            pieces = Counter(_PIECES(text.encode()))
        else:
            pieces = self._mixed_pieces(text)
            if pieces is None:
                return None
        known = self._piece_counts
        if len(known) > 200_000:  # a long-lived process must not grow without bound
            known.clear()
        total = 0
        for piece, times in pieces.items():
            n = known.get(piece)
            if n is None:
                get = self.ranks.get
                if get(piece) is not None:
                    n = 1
                elif len(piece) > MAX_MERGED_PIECE:
                    return None
                else:
                    n = merged_parts(piece, get)
                known[piece] = n
            total += n * times
        return total

    def _mixed_pieces(self, text: str) -> Counter | None:
        """The pieces of a text with characters outside ASCII: ASCII lines read together, the others by stand-ins."""
        pieces: Counter = Counter()
        plain: list[str] = []
        for line in _LINES(text):
            if line.isascii():
                plain.append(line)
                continue
            if plain:
                pieces.update(_PIECES("".join(plain).encode()))
                plain.clear()
            read = self._read_through_stand_ins(line)
            if read is None:
                return None
            ends = list(accumulate(map(len, read)))  # a stand-in is one byte per character: cut the line there
            pieces.update(map(str.encode, map(line.__getitem__, map(slice, [0, *ends[:-1]], ends))))
        if plain:
            pieces.update(_PIECES("".join(plain).encode()))
        return pieces

    def _read_through_stand_ins(self, line: str) -> list[bytes] | None:
        """The pieces of `line` with each non-ASCII character replaced by its class's stand-in (same lengths)."""
        table = self._stand_ins
        for ch in set(line):
            if ch.isascii() or ord(ch) in table:
                continue
            stand_in = _SPECIAL.get(ch)
            if stand_in is None:
                category = unicodedata.category(ch)
                if category in ("Cn", "Cs"):
                    return None
                stand_in = _STAND_IN.get(category, _OTHER)
            table[ord(ch)] = stand_in
        return _PIECES(line.translate(table).encode("latin-1"))


def merged_parts(piece: bytes, get: Callable[[bytes], int | None]) -> int:
    """How many tokens byte-pair merging leaves of `piece` (at least 2 bytes, not itself a token).

    `get` is the table's lookup: token bytes -> rank, or None.
    """
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
