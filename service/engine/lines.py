"""Split a byte stream into complete JSONL lines, holding back an unfinished tail.

Claude Code appends one JSON object a line; a reader that catches the file
mid-write sees half a line. That half is kept until its newline arrives, so
feeding a file in arbitrary chunks yields exactly the lines of reading it whole.

A line is at most `max_line` bytes (config.toml `[transcripts] max_line_mb`):
a longer one -- a crash that never finished its line, a file of zeros -- is
dropped as soon as it outgrows the bound, never held whole, and the bytes up to
its newline are skipped. `feed` puts an empty line (OVERLONG) where it was, so
an engine counts it as a skipped line in its place, whatever the chunking.
"""
from __future__ import annotations

DEFAULT_MAX_LINE = 128 << 20
OVERLONG = b""  # stands for a dropped over-long line in `feed`'s output (malformed to a parser)


class LineSplitter:
    __slots__ = ("_tail", "_skipping", "max_line", "long_lines")

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self._tail: bytes | bytearray = b""
        self._skipping = 0          # bytes of an over-long line dropped so far (its newline not seen yet)
        self.max_line = max(1, int(max_line))
        self.long_lines = 0         # over-long lines dropped, whole ones (their newline seen)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Complete lines in `chunk` (newline stripped, blank lines dropped, OVERLONG for a dropped one)."""
        if not chunk:
            return []
        data, stop, ended = self._take(chunk)
        out = [OVERLONG] if ended else []
        if stop:
            lines = data[:stop - 1].split(b"\n")
            if stop <= self.max_line:  # no line in it can be too long
                out += [ln for ln in lines if ln.strip()]
            else:
                for ln in lines:
                    if len(ln) > self.max_line:
                        self.long_lines += 1
                        out.append(OVERLONG)
                    elif ln.strip():
                        out.append(ln)
        return out

    def feed_buffer(self, chunk: bytes) -> tuple[bytes, int]:
        """(data, stop): data[:stop] holds whole lines, each ending with its newline, none over-long.

        For readers that walk the buffer themselves (the report's scan); the
        buffer is `chunk` itself when no tail was held (no copy).
        """
        data, stop, _ = self._take(chunk)
        if stop > self.max_line:
            kept = []
            for ln in data[:stop - 1].split(b"\n"):
                if len(ln) > self.max_line:
                    self.long_lines += 1
                else:
                    kept.append(ln)
            data = b"\n".join(kept) + b"\n" if kept else b""
            stop = len(data)
        return data, stop

    def _take(self, chunk: bytes) -> tuple[bytes, int, int]:
        """(data, stop, ended): data[:stop] are whole lines; `ended` is 1 when an over-long line
        being skipped ended in this chunk (it came before those lines)."""
        ended = 0
        if self._skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._skipping += len(chunk)
                return b"", 0, 0
            self._skipping = 0
            self.long_lines += 1
            ended = 1
            chunk = chunk[nl + 1:]
            if not chunk:
                return b"", 0, ended
        end = chunk.rfind(b"\n")
        if end < 0:
            if self._tail:
                if not isinstance(self._tail, bytearray):  # growing: no copy of the whole per chunk
                    self._tail = bytearray(self._tail)
                self._tail += chunk
            else:
                self._tail = chunk
            if len(self._tail) > self.max_line:
                self._skipping, self._tail = len(self._tail), b""
            return b"", 0, ended
        if self._tail:
            head = len(self._tail)
            data = bytes(self._tail) + chunk if isinstance(self._tail, bytearray) else self._tail + chunk
            end += head
        else:
            data = chunk
        tail = data[end + 1:]
        if len(tail) > self.max_line:
            self._skipping, tail = len(tail), b""
        self._tail = tail
        return data, end + 1, ended

    @property
    def tail(self) -> bytes:
        """The unfinished last line held (empty while one is being skipped)."""
        return bytes(self._tail)

    @property
    def skipping(self) -> int:
        """Bytes of an unfinished over-long line dropped so far (0 when none)."""
        return self._skipping

    @property
    def pending(self) -> int:
        """Bytes not handed out as lines yet: an unfinished last line, held or being skipped."""
        return len(self._tail) + self._skipping
