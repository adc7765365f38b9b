"""o200k_base token counts in Python, the same numbers as tiktoken's, without building its encoder.

tiktoken spends 0.13-0.35 s of CPU and 76 MB turning the 200 000-entry table into its encoder before it
counts anything; this counter loads the sorted table in 6 ms and, once its pattern and its pieces are
built, counts a real history's texts at tiktoken's pace (decision 490). It uses the same table and the
same split pattern:
- the text is cut into pieces by o200k's pattern. An ASCII text is cut by the pattern written out
  below for Python's `re` over bytes. Any other text is cut by the same pattern over `str`, its
  classes spelled out code point by code point for the Basic Multilingual Plane from this Python's
  `unicodedata` (built once per process, `_bmp_pattern`); a text with a character beyond it that the
  pattern tells apart (a letter, mark or number) is read through stand-ins: each character outside
  ASCII becomes a byte for its class (letter of which case, mark, number, white space, other) and the
  pieces are cut from the original text at the same lengths. A character this Python's Unicode does
  not know (tiktoken's may class it), or a lone surrogate, leaves the text to tiktoken;
- a piece that is a token counts 1; any other piece is merged pair by pair, the lowest-ranked pair
  first (the leftmost among equals), as tiktoken's byte-pair merge does, and counts its remaining parts.
  Each distinct piece is counted once per process.
tests/integration/measure/test_o200k_count.py compares the counts with tiktoken's on every code point
and on random text.
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from array import array
from heapq import heapify, heappop, heappush
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

# Pieces counted once and remembered before the memory starts afresh (a long-lived service must not grow
# without bound): real-wild's 3.3 M characters hold 25 thousand distinct pieces.
MAX_KNOWN_PIECES = 200_000
# Merging a piece scans its pairs once a merge; from this length a heap finds the lowest pair instead.
HEAP_FROM = 64
# A longer piece (one run of letters or of symbols, megabytes long) is left to tiktoken, as merging it here
# would hold about 60 bytes a byte of it (a 4 MiB piece: 4-20 s and 250 MB).
MAX_MERGED_PIECE = 4 << 20
_START_BITS = 40  # a heap entry: rank << _START_BITS | where the pair starts
_START_MASK = (1 << _START_BITS) - 1
_NO_PAIR = 1 << 62  # above every rank: a pair that is no token


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
            self.hash_now()
        i = bisect_left(self.tokens, piece)
        return self.ranks[i] if i < len(self.tokens) and self.tokens[i] == piece else None

    def as_dict(self) -> dict[bytes, int]:
        return dict(zip(self.tokens, self.ranks))

    def hash_now(self) -> None:
        """Become the dict's own lookup now (a process about to count a lot, or to fork workers that will)."""
        if self.table is None:
            self.table = self.as_dict()
            self.get = self.table.get


def build_pattern() -> None:
    """Build o200k's pattern over `str` now (a process about to fork workers that will count)."""
    _bmp_pattern()


class O200kCounter:
    """Counts with tiktoken's o200k table and its split pattern.

    `ranks` maps token bytes to ranks through `.get` (a dict or a SortedRanks);
    `pat_str` must be o200k's pattern, else every text is left to tiktoken.
    """

    def __init__(self, ranks: dict[bytes, int] | SortedRanks, pat_str: str):
        self.ranks = ranks
        self.usable = pat_str == O200K_PATTERN
        self._piece_counts: dict[bytes | str, int] = {}
        self._stand_ins: dict[int, str] = {}  # code point -> stand-in, for the characters met so far

    def count(self, text: str) -> int | None:
        """The o200k token count of `text`, or None when tiktoken must count it (see the module's doc)."""
        if not self.usable:
            return None
        pieces: Sequence[bytes | str] | None
        if text.isascii():
            pieces = _PIECES(text.encode())
        else:
            pieces = self.pieces_outside_ascii(text)
            if pieces is None:
                return None
        known = self._piece_counts
        try:
            return sum(map(known.__getitem__, pieces))
        except KeyError:
            if len(known) > MAX_KNOWN_PIECES:
                known.clear()
            get = self.ranks.get
            for piece in set(pieces).difference(known):
                raw = piece.encode() if isinstance(piece, str) else piece  # kept as both: an ASCII text's
                n = known.get(raw)                                          # pieces are bytes, another's str
                if n is None:
                    if len(raw) > MAX_MERGED_PIECE:
                        return None
                    n = known[raw] = 1 if get(raw) is not None else merged_parts(raw, get)
                known[piece] = n
            return sum(map(known.__getitem__, pieces))

    def pieces_outside_ascii(self, text: str) -> Sequence[bytes | str] | None:
        """The pieces of a text with characters outside ASCII, or None for a character this Python does not know."""
        unknown, findall = _bmp_pattern()
        if unknown(text):
            return None
        beyond = _BEYOND_BMP(text)
        if beyond and any(_stand_in(ch) != _OTHER for ch in set(beyond)):
            return self._mixed_pieces(text)
        return findall(text)

    def _mixed_pieces(self, text: str) -> list[bytes] | None:
        """The pieces of a text read through stand-ins: ASCII lines read together, the others by stand-ins."""
        pieces: list[bytes] = []
        plain: list[str] = []
        for line in _LINES(text):
            if line.isascii():
                plain.append(line)
                continue
            if plain:
                pieces += _PIECES("".join(plain).encode())
                plain.clear()
            read = self._read_through_stand_ins(line)
            if read is None:
                return None
            ends = list(accumulate(map(len, read)))  # a stand-in is one byte per character: cut the line there
            pieces += map(str.encode, map(line.__getitem__, map(slice, [0, *ends[:-1]], ends)))
        if plain:
            pieces += _PIECES("".join(plain).encode())
        return pieces

    def _read_through_stand_ins(self, line: str) -> list[bytes] | None:
        """The pieces of `line` with each non-ASCII character replaced by its class's stand-in (same lengths)."""
        table = self._stand_ins
        for ch in set(line):
            if ch.isascii() or ord(ch) in table:
                continue
            stand_in = _stand_in(ch)
            if stand_in is None:
                return None
            table[ord(ch)] = stand_in
        return _PIECES(line.translate(table).encode("latin-1"))


def _stand_in(ch: str) -> str | None:
    """The stand-in for a character outside ASCII, None for one this Python's Unicode does not know."""
    stand_in = _SPECIAL.get(ch)
    if stand_in is None:
        category = unicodedata.category(ch)
        if category in ("Cn", "Cs"):
            return None
        stand_in = _STAND_IN.get(category, _OTHER)
    return stand_in


_BEYOND_BMP = re.compile("[\U00010000-\U0010ffff]").findall
_bmp: tuple[Callable[[str], object], Callable[[str], list[str]]] | None = None


def _bmp_pattern() -> tuple[Callable[[str], object], Callable[[str], list[str]]]:
    """(search for a character this Python does not know, o200k's pattern over `str`) for text whose
    characters beyond the Basic Multilingual Plane are all of the class "other": the byte pattern's
    classes with each stand-in replaced by the characters it stands for (55 ms to build, once)."""
    global _bmp
    if _bmp is None:
        members: dict[str | None, list[int]] = {}
        for cp in range(0x80, 0x10000):
            members.setdefault(_stand_in(chr(cp)), []).append(cp)

        def chars(*stand_ins: str | None) -> str:
            cps = sorted(cp for s in stand_ins for cp in members.get(s, ()))
            runs = [[cps[0], cps[0]]] if cps else []
            for cp in cps[1:]:
                if cp == runs[-1][1] + 1:
                    runs[-1][1] = cp
                else:
                    runs.append([cp, cp])
            return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in runs)

        ws = "\\t\\n\\x0b\\x0c\\r " + chars(_SPACE)
        up = "A-Z" + chars(_MARK, _UPPER_ONLY, _EITHER_CASE)
        low = "a-z" + chars(_MARK, _LOWER_ONLY, _EITHER_CASE, _LONG_S)
        ln = "A-Za-z0-9" + chars(_UPPER_ONLY, _LOWER_ONLY, _EITHER_CASE, _LONG_S, _NUMBER)
        contraction = "(?:'[sS\u017f]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
        pattern = re.compile(
            f"[^\\r\\n{ln}]?[{up}]*[{low}]+{contraction}|[^\\r\\n{ln}]?[{up}]+[{low}]*{contraction}"
            f"|[0-9{chars(_NUMBER)}]{{1,3}}| ?[^{ws}{ln}]+[\\r\\n/]*|[{ws}]*[\\r\\n]+|[{ws}]+(?![^{ws}])|[{ws}]+")
        _bmp = re.compile(f"[{chars(None)}]").search, pattern.findall
    return _bmp


def merged_parts(piece: bytes, get: Callable[[bytes], int | None]) -> int:
    """How many tokens byte-pair merging leaves of `piece` (at least 2 bytes, not itself a token).

    `get` is the table's lookup: token bytes -> rank, or None.
    """
    return (_merged_parts_by_heap if len(piece) >= HEAP_FROM else _merged_parts_by_scan)(piece, get)


def _merged_parts_by_scan(piece: bytes, get: Callable[[bytes], int | None]) -> int:
    """merged_parts for a short piece: each merge scans the pairs for the lowest (C's min and index)."""
    starts = list(range(len(piece) + 1))  # part k is piece[starts[k]:starts[k + 1]]
    pair_ranks = [_NO_PAIR if (r := get(piece[i:i + 2])) is None else r  # pair k joins parts k and k + 1
                  for i in range(len(piece) - 1)]
    while pair_ranks:
        best = min(pair_ranks)
        if best == _NO_PAIR:
            break
        k = pair_ranks.index(best)  # the leftmost among equals
        del starts[k + 1]
        del pair_ranks[k]
        if k < len(pair_ranks):
            r = get(piece[starts[k]:starts[k + 2]])
            pair_ranks[k] = _NO_PAIR if r is None else r
        if k > 0:
            r = get(piece[starts[k - 1]:starts[k + 1]])
            pair_ranks[k - 1] = _NO_PAIR if r is None else r
    return len(starts) - 1


def _merged_parts_by_heap(piece: bytes, get: Callable[[bytes], int | None]) -> int:
    """merged_parts for a long piece: the pairs in a heap by (rank, start), so the lowest, leftmost among
    equals, comes first as in the scan. An entry is one int (rank and start) and the parts are two arrays,
    about 60 bytes a byte of the piece; a popped entry whose pair's rank has changed since is skipped."""
    n = len(piece)
    after = array("q", range(1, n + 2))   # after[s]: where the part that starts at s ends (-1: no part starts there)
    before = array("q", range(-1, n))     # before[e]: where the part that ends at e starts
    heap = [r << _START_BITS | i for i in range(n - 1) if (r := get(piece[i:i + 2])) is not None]
    heapify(heap)
    parts = n
    while heap:
        entry = heappop(heap)
        s = entry & _START_MASK
        middle = after[s]
        if not 0 < middle < n:
            continue  # no part starts at s any more, or it is the last
        end = after[middle]
        if get(piece[s:end]) != entry >> _START_BITS:
            continue  # the pair at s has changed since this entry was pushed
        after[s] = end
        before[end] = s
        after[middle] = before[middle] = -1
        parts -= 1
        if end < n and (r := get(piece[s:after[end]])) is not None:
            heappush(heap, r << _START_BITS | s)
        if s > 0 and (r := get(piece[before[s]:end])) is not None:
            heappush(heap, r << _START_BITS | before[s])
    return parts
