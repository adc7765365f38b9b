"""Scan Claude Code transcript folders into per-file channel results, fast.

Used by `ctxlamp report` and the service's report answers. Speed matters
(a 500 MB history in about ccusage's time), so:
- lines that cannot carry usage (a call's, or a subagent's in a progress line), a
  tracked tool's result, a compaction or a cost-state are skipped with byte checks before any JSON parsing (tool
  results are parsed only when they answer a call a meter is waiting for);
- files are parsed with orjson, in forked worker processes when there is enough work;
- per-file results are cached by (inode, size, mtime) in a file under the data
  dir, so a warm scan re-reads only what changed.
File sizes for the retrieval estimate are read from disk when a file is first
scanned and remembered in that cache, so deleting a file later does not
change history.

One module of about 500 lines: the byte checks, the chunked reader and the
workers' result format change together.
"""
from __future__ import annotations

import errno
import functools
import gc
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from service.report import forked
from service.channels.edit import settle_tokens
from service.channels.entries import parts
from service.channels.meters import ChannelMeters
from service.engine.compactions import IDLE_NOTE_MARK
from service.channels.spend import SpendCollector, count_placeholders

from service import __version__
from service.engine.lines import DEFAULT_MAX_LINE, LineSplitter
from service.ingest.transcript_file import Skipped
from service.report.restart import MALFORMED

# Unscanned history from which a replaying report's forked workers share one tiktoken encoder, built before
# the fork, and count every text they read (decision 460): a real history holds about 60 thousand characters
# to count a megabyte, so from here each worker would otherwise count half a million in Python and build one.
SHARED_ENCODER_MIN_BYTES = 10 * 1024 * 1024
CACHE_VERSION = f"10/{__version__}"  # bump the number when a meter's output changes


@dataclass(frozen=True)
class TranscriptFile:
    path: str
    project: str          # the folder under projects/ (Claude Code's encoded cwd)
    subagent: bool        # a sidechain file: <session>/subagents/agent-*.jsonl or flat agent-*.jsonl
    session_hint: str     # session id from the layout (parent folder or file stem)


def discover(projects_root: Path, kept: Path | None = None) -> list[TranscriptFile]:
    """Every transcript under `projects_root` (main files and subagent files), and the kept copy of each
    one Claude Code has deleted when `kept` holds copies of that folder (service/ingest/kept.py)."""
    out = _walk(projects_root)
    if kept is not None and os.path.isdir(kept):
        from service.ingest.kept import mirrors

        if mirrors(kept, projects_root):
            root = os.fspath(projects_root)
            present = {os.path.relpath(tf.path, root) for tf in out}
            out += [tf for tf in _walk(kept) if os.path.relpath(tf.path, kept) not in present
                    and not os.path.lexists(os.path.join(root, os.path.relpath(tf.path, kept)))]
            out.sort(key=lambda f: f.path)
    return out


def _walk(projects_root: Path) -> list[TranscriptFile]:
    out: list[TranscriptFile] = []
    root = os.fspath(projects_root)
    if not os.path.isdir(root):
        return out
    cut = len(os.path.join(root, ""))
    for dirpath, dirnames, filenames in os.walk(root):
        if len(dirpath) < cut:
            continue  # the root itself: transcripts live in a project folder
        rel = dirpath[cut:].split(os.sep)
        project = rel[0]
        sub_at = rel.index("subagents") if "subagents" in rel else -1
        if len(rel) == 1:  # a folder named like a session file: listed, so the reader names it as skipped
            filenames = filenames + [d for d in dirnames if d.endswith(".jsonl")]
        for name in filenames:
            if not name.endswith(".jsonl"):
                continue
            if sub_at >= 0:
                hint = rel[sub_at - 1] if sub_at >= 1 else name[:-6]
            else:
                hint = name[:-6]
            out.append(TranscriptFile(os.path.join(dirpath, name), project, sub_at >= 0 or name.startswith("agent-"),
                                      hint))
    out.sort(key=lambda f: f.path)
    return out


class SizeMemo:
    """Sizes of files named in tool results: remembered first, else read from disk once."""

    def __init__(self, remembered: dict[str, int] | None = None):
        self.remembered = remembered if remembered is not None else {}
        self.new: dict[str, int] = {}
        self._missing: set[str] = set()

    def get(self, path: str) -> int | None:
        size = self.new.get(path)
        if size is None:
            size = self.remembered.get(path)
        if size is not None:
            return size
        if path in self._missing:
            return None
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            self._missing.add(path)
            return None
        if not os.path.isfile(path):
            self._missing.add(path)
            return None
        self.new[path] = st.st_size
        return st.st_size


CHUNK = 16 * 1024 * 1024


def complete_buffers(chunks: Iterable[bytes], splitter: LineSplitter | None = None
                     ) -> Iterator[tuple[bytes, int, bool]]:
    """(buffer, stop, complete): whole lines are buffer[:stop], each ending in a newline.

    The last piece may be an unfinished line (complete False, stop = its length).
    A file read in one piece is never copied. Lines longer than the splitter's
    bound are left out (counted in `splitter.long_lines`).
    """
    splitter = splitter or LineSplitter()
    for chunk in chunks:
        if not chunk:
            continue
        data, stop = splitter.feed_buffer(chunk)
        if stop:
            yield data, stop, True
    tail = splitter.tail
    if tail:
        yield tail, len(tail), False


def file_chunks(path: str) -> Iterator[bytes]:
    """A file in 16 MB pieces, so a huge transcript never sits in memory whole (transcript_file's rules); a
    kept copy decompressed."""
    from service.ingest.kept import read_chunks

    return read_chunks(path, CHUNK)


# -- which lines to parse ---------------------------------------------------------------------
#
# Most bytes of a transcript are tool output, attachments and request copies that no meter
# reads. A line is parsed only when its top-level "type" can matter: assistant (usage, tool
# calls), user lines answering a tool call a meter waits for, system compact boundaries (and the
# notes saying one ran while the user was idle), cost-state and the progress lines that carry a subagent's
# call. The top-level type is found without parsing, from how JSON text is built: the
# bytes `"type":"` outside a string are always a key named type with a string value (a quote
# inside a string is escaped), and such a key is at the top level when no `{` opens before it
# on the line, or when no `}` closes after it except the line's last. A line where neither test
# decides is kept when any of its type values would be; a line written with spaces after the
# colons falls back to substring checks. Both may parse more than needed, never less.

_TYPE_KEY = b'"type":"'
_TOOL_USE_ID = b'"tool_use_id":"'


NO_TYPE_KEY, UNDECIDED = -1, -2


def type_value_at(data: bytes, start: int, end: int) -> int:
    """Where the top-level "type" value of the JSON line data[start:end] begins.

    NO_TYPE_KEY when the line has no `"type":"` at all, UNDECIDED when it has
    some but neither rule tells which one is at the top level.
    """
    find = data.find
    i = find(_TYPE_KEY, start, end)
    if i < 0:
        return NO_TYPE_KEY
    if find(b"{", start + 1, i) < 0:
        return i + 8
    j = data.rfind(_TYPE_KEY, i, end)
    last = data.rfind(b"}", j, end)
    if last < 0 or find(b"}", j, last) >= 0:
        return UNDECIDED
    return j + 8


def answers_pending(data: bytes, start: int, end: int, pending: tuple[dict, ...]) -> bool:
    """Whether a user line carries a tool_result for a call a meter waits for."""
    find = data.find
    k = find(_TOOL_USE_ID, start, end)
    while k >= 0:
        q = k + len(_TOOL_USE_ID)
        r = find(b'"', q, end)
        if r < 0:
            return False
        tid = data[q:r].decode("utf-8", "replace")
        if any(tid in p for p in pending):
            return True
        k = find(_TOOL_USE_ID, r, end)
    return False


def _wanted_type(data: bytes, v: int, start: int, end: int, pending: tuple[dict, ...]) -> bool:
    """Whether a line whose top-level type value begins at data[v] is worth parsing."""
    startswith = data.startswith
    if startswith(b'assistant"', v) or startswith(b'cost-state"', v):
        return True
    if startswith(b'user"', v):
        return bool(pending[0] or pending[1]) and answers_pending(data, start, end, pending)
    if startswith(b'system"', v):  # compaction boundaries, and the note that one ran while the user was idle
        return data.find(b"compact_boundary", start, end) >= 0 or data.find(IDLE_NOTE_MARK, start, end) >= 0
    if startswith(b'progress"', v):  # a subagent's call reported to the main transcript
        return data.find(b'"agent_progress"', start, end) >= 0 and data.find(b'"usage"', start, end) >= 0
    return False


_WANTED_VALUES = (b'assistant"', b'cost-state"', b'user"', b'system"', b'progress"')  # what _wanted_type may keep


def _any_wanted_type(data: bytes, start: int, end: int, pending: tuple[dict, ...]) -> bool:
    """Whether any "type" value of the line, at whatever depth, is one `_wanted_type` keeps.

    Undecided lines are mostly attachments, with a few typed objects each: one pass over the line
    from one `"type":"` to the next, one test of each value against every wanted one.
    """
    find, startswith = data.find, data.startswith
    i = find(_TYPE_KEY, start, end)
    while i >= 0:
        if startswith(_WANTED_VALUES, i + 8) and _wanted_type(data, i + 8, start, end, pending):
            return True
        i = find(_TYPE_KEY, i + 8, end)
    return False


def _spaced_wanted(line: bytes, pending: tuple[dict, ...]) -> bool:
    """Substring rules for a line without `"type":"` (JSON written with spaces, or no type at all)."""
    if b'"type": "assistant"' in line:
        return True
    if b'"tool_result"' in line:
        return any(tid.encode() in line for p in pending for tid in p)
    return (b"compact_boundary" in line or b'"cost-state"' in line or b'"agent_progress"' in line
            or IDLE_NOTE_MARK in line)


def _split(data: bytes, stop: int, complete: bool) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of data[:stop]: one unfinished line when not `complete`."""
    find = data.find
    pos = 0
    while pos < stop:
        end = find(b"\n", pos, stop) if complete else stop
        yield pos, end
        pos = end + 1


def wanted_lines(data: bytes, stop: int, complete: bool, pending: tuple[dict, ...],
                 lines: Iterable[tuple[int, int]] | None = None,
                 bad: list[int] | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of data[:stop] worth parsing, in order.

    `pending` holds the calls the meters wait for; it is read as the caller
    feeds each yielded line, so a result is kept when its call came just before.
    A line whose top-level type is undecided is kept when any of its type
    values would be kept at the top level (the top-level one is among them).
    `lines`: the lines of data[:stop] to judge when another reader split the buffer already (the
    restart replay's walk: every line but those it knows this rule leaves).
    `bad`: gets the start of each line left here that is not a JSON object (one without a "type" key,
    garbage; one that does not end in "}", a torn write), so the count of bad lines is `ctxlamp
    replay`'s without a replay to ask (a line that ends in "}" and breaks inside is not looked at).
    """
    # type_value_at and _wanted_type, inlined: this loop runs once per line of the history
    find, rfind, startswith = data.find, data.rfind, data.startswith
    for start, end in _split(data, stop, complete) if lines is None else lines:
        if end - start < 2:
            continue
        i = find(_TYPE_KEY, start, end)
        if i < 0:
            if _spaced_wanted(data[start:end], pending):
                yield start, end
            elif bad is not None and complete and data[start:end].strip() and not _json_object(data[start:end]):
                bad.append(start)
            continue
        if find(b"{", start + 1, i) >= 0:  # the first "type" is nested: is the last one at the top level?
            i = rfind(_TYPE_KEY, i, end)
            last = rfind(b"}", i, end)
            if last < 0 or find(b"}", i, last) >= 0:  # undecided
                if _any_wanted_type(data, start, end, pending):
                    yield start, end
                continue
        # most lines' type is none of these: one test, then the one that matches
        if startswith(_WANTED_VALUES, i + 8) and _wanted_type(data, i + 8, start, end, pending):
            yield start, end
        elif bad is not None and complete and data[end - 1] != 125 and not _json_object(data[start:end]):
            bad.append(start)  # left by the rule and not ending in "}": a torn write, parsed to be sure


def _json_object(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def scan_bytes(data: bytes, tf: TranscriptFile, sizes: SizeMemo,
               count_tokens: Callable[[str], int] | None = None) -> dict:
    """Meter one transcript's bytes; the result is plain data (cacheable)."""
    return scan_chunks([data], tf, sizes, count_tokens)


def scan_chunks(chunks: Iterable[bytes], tf: TranscriptFile, sizes: SizeMemo,
                count_tokens: Callable[[str], int] | None = None, *, defer_tokens: bool = False,
                replay: Any = None) -> dict:
    """Meter one transcript read piece by piece.

    A last line without its newline is being written: it is used if it is
    already whole JSON, else left for the next scan (not counted as damage).
    With `defer_tokens`, edit events keep their old_strings and placeholder-output calls their texts for
    `settle`.
    `replay` (service/report/restart.py's Replay) is fed the same lines, split once; the lines it
    decodes are not decoded again here.
    """
    meters = ChannelMeters(tf.session_hint, sidechain_file=tf.subagent, count_tokens=count_tokens or lazy_counter,
                           defer_tokens=defer_tokens)
    spend = SpendCollector(sidechain_file=tf.subagent)
    events: list[dict] = []
    malformed = parsed = size = 0
    session_id = cwd = None
    pending = (meters.edit.calls.pending, meters.retrieval.calls.pending)

    loads = orjson.loads
    splitter = LineSplitter(_worker.max_line)
    decoded: dict[int, Any] = {}
    bad: list[int] | None = [] if replay is None else None  # a replay counts them itself
    for data, stop, complete in complete_buffers(chunks, splitter):
        size += stop
        lines = None
        if replay is not None and complete:  # the unfinished last piece: the replay holds it back
            decoded, lines = replay.feed_buffer(data, stop, splitter.long_lines)
        elif decoded:
            decoded = {}
        for start, end in wanted_lines(data, stop, complete, pending, lines, bad):
            entry = decoded.get(start) if decoded else None
            if entry is None:
                try:
                    entry = loads(data[start:end])
                except orjson.JSONDecodeError:
                    malformed += complete
                    continue
            elif entry is MALFORMED:
                malformed += 1
                continue
            if not isinstance(entry, dict):
                malformed += 1
                continue
            parsed += 1
            if session_id is None and isinstance(entry.get("sessionId"), str):
                session_id = entry["sessionId"]
            if cwd is None and isinstance(entry.get("cwd"), str):
                cwd = entry["cwd"]
            p = parts(entry)
            spend.feed(entry, p)
            for ev in meters.feed(entry, sizes, p):
                events.append(ev.to_dict())
    if replay is not None:
        replay.at_end(splitter.pending, splitter.long_lines)
        malformed = replay.malformed  # every line the engine read: the count `ctxlamp replay` gives
    else:
        malformed += len(bad or ())
    result = {
        "session_id": session_id or tf.session_hint, "project": tf.project, "cwd": cwd, "subagent": tf.subagent,
        "events": events, "calls": list(spend.calls.values()), "cost_state": spend.cost_state,
        "malformed": malformed, "parsed": parsed, "bytes": size,
        "long_lines": splitter.long_lines + (splitter.skipping > 0),  # an unfinished one counts: it is too long
        "placeholder_texts": spend.placeholder_texts(),
    }
    if not defer_tokens:
        count_placeholders(result, count_tokens or lazy_counter)
    return result


def settle(result: dict, count_tokens: Callable[[str], int]) -> None:
    """Count, in place, the texts a worker scanning without a tokenizer left in its result: edits' old_strings
    and placeholder outputs' texts."""
    settle_tokens(result["events"], count_tokens)
    count_placeholders(result, count_tokens)


def lazy_counter(text: str) -> int:
    """o200k count, loading the tokenizer only when a file really has an edit to count.

    Through the process's one content-keyed counter (`shared_counter`, the engine's), so a text is
    counted once per process whoever asks: a resumed session repeats its edits in the new file, a model
    often retries the same old_string, and the replay has counted the same edits for the engine.
    """
    from service.engine_setup.engines import shared_counter

    return shared_counter().count(text)


def load_tokenizer() -> None:
    """The o200k table and the Python counter, loaded now (a parent does it while its workers scan)."""
    from service.engine_setup.tokenizer import encode_len

    encode_len("")


class _WorkerState(threading.local):
    """What `init_worker` sets for the scans that follow, per thread: the service scans on several threads
    (the first pass in its own, a served report or budgets in another), and a setting one of them made for
    itself must not change what another reads."""

    def __init__(self) -> None:
        self.remembered: dict[str, int] = {}
        self.max_line = DEFAULT_MAX_LINE
        self.replay: tuple[Any, frozenset[str]] | None = None  # (prices, main transcripts to replay as they are read)
        self.count_here = False  # the worker counts every text of its results itself (in parallel), the parent none


_worker = _WorkerState()


def init_worker(remembered: dict[str, int], max_line: int = DEFAULT_MAX_LINE,
                 replay: tuple[Any, frozenset[str]] | None = None, count_here: bool = False) -> None:
    _worker.remembered = remembered
    _worker.max_line = max_line
    _worker.replay = replay
    _worker.count_here = count_here


ScanItem = tuple[str, "dict | str | None", dict[str, int], "list[dict] | None"]


def worker_sizes() -> SizeMemo:
    """The file sizes this worker was given to remember, and what it learns (`SizeMemo.new`)."""
    return SizeMemo(_worker.remembered)


def scan_one(tf: TranscriptFile) -> ScanItem:
    """(path, result, new sizes, replayed segments); the result is the reason instead when the file was
    skipped. A main transcript the report replays for its restart figures is replayed from the same
    read (service/report/restart.py's Replay): segments, else None."""
    sizes = worker_sizes()
    replay = None
    if _worker.replay is not None and tf.path in _worker.replay[1]:
        from service.report.restart import Replay

        replay = Replay(tf.path, _worker.replay[0])
    unread: list[dict] | None = [] if replay is not None else None  # an unreadable file has no segments
    try:
        chunks = file_chunks(tf.path)
        # old_strings are counted by `scan`'s collect, once per distinct text, in the parent; a worker that
        # replays the file counts them itself: its engine has counted the same edits (the cache answers). A
        # worker that shares the parent's encoder counts everything (`scan`)
        result = scan_chunks(chunks, tf, sizes, defer_tokens=True, replay=replay)
        if _worker.count_here:  # counted here, in parallel (with the encoder the parent built before the fork, if it did)
            settle(result, lazy_counter)
        elif replay is not None:
            settle_tokens(result["events"], lazy_counter)
        return tf.path, result, sizes.new, replay.segments() if replay is not None else None
    except Skipped as exc:
        return tf.path, None if exc.gone else exc.reason, {}, unread
    except OSError:
        return tf.path, None, {}, unread


def fingerprint(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # there, but endless: read, so that it is named as skipped
            return [-1, 0, 0]
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


class ScanCache:
    """Per-file results keyed by path and (inode, size, mtime_ns), plus remembered file sizes.

    A result is serialized when it is put (while a report's workers still scan), so
    saving is little more than a join and a write.
    """

    def __init__(self, path: Path | None, max_line: int = DEFAULT_MAX_LINE):
        self.path = Path(path) if path else None
        # results depend on the line bound: another bound is another cache
        self.version = CACHE_VERSION if max_line == DEFAULT_MAX_LINE else f"{CACHE_VERSION}/{max_line}"
        self.files: dict[str, dict] = {}
        self.sizes: dict[str, int] = {}
        self.dirty = False
        self._json: dict[str, bytes] = {}  # path -> `"path":{entry}` as JSON, for entries put since loading
        if self.path is not None:
            try:
                doc = orjson.loads(self.path.read_bytes())
                if isinstance(doc, dict):
                    self.sizes = doc.get("sizes") or {}   # remembered sizes outlive a format change
                    if doc.get("version") == self.version:
                        self.files = doc.get("files") or {}
            except (OSError, orjson.JSONDecodeError):
                pass

    def get(self, path: str, fp: list[int] | None) -> dict | None:
        hit = self.files.get(path)
        if hit is not None and fp is not None and hit.get("fp") == fp:
            return hit.get("result")
        return None

    def put(self, path: str, fp: list[int] | None, result: dict) -> None:
        """Keep a result; it must not change afterwards (it is serialized now)."""
        entry = self.files[path] = {"fp": fp, "result": result}
        self._json[path] = orjson.dumps(path) + b":" + orjson.dumps(entry)
        self.dirty = True

    def prune(self, keep: Iterable[str]) -> None:
        """Forget transcripts that are gone (entries of other kinds, e.g. "ledger:…", are left alone)."""
        keep = set(keep)
        for p in [p for p in self.files if p not in keep and not p.startswith("ledger:")]:
            del self.files[p]
            self._json.pop(p, None)
            self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        from service.client.privdir import write_private
        dumps = orjson.dumps
        pieces = [b'{"version":' + dumps(self.version) + b',"files":{']
        for p, entry in self.files.items():
            pieces += (self._json.get(p) or dumps(p) + b":" + dumps(entry), b",")
        if self.files:
            pieces.pop()  # the last comma
        pieces.append(b'},"sizes":' + dumps(self.sizes) + b"}")
        write_private(self.path, b"".join(pieces), durable=False)  # one write: one wait for the GIL
        self.dirty = False


Progress = Callable[[int, int, int, int], None]  # (files done, files total, bytes done, bytes total)


def scan(files: list[TranscriptFile], cache: ScanCache, *, workers: int | None = None,
         progress: Progress | None = None, fingerprints: dict[str, list[int] | None] | None = None,
         pool_min_bytes: int | None = None, meanwhile: Callable[[], None] | None = None,
         on_result: Callable[[str, dict], None] | None = None, max_line: int = DEFAULT_MAX_LINE,
         skipped: dict[str, str] | None = None, replay: tuple[Any, frozenset[str]] | None = None,
         replayed: dict[str, list[dict]] | None = None, counts_in: Path | None = None) -> dict[str, dict]:
    """Results for every file: cached where unchanged, scanned (in parallel when worth it) otherwise.

    `meanwhile` is work the caller needs next (loading prices, say): the parent
    does it while its workers scan, before the first result. `on_result(path,
    result)` sees each scanned file's result as it comes in (not cached ones).
    Files that are not readable regular files (service/ingest/transcript_file.py) have
    no result; `skipped` gets path -> why. Lines over `max_line` bytes are skipped.
    `replay` = (prices, paths): main transcripts among those scanned to replay with the engine from
    the same read (their restart figures); `replayed` gets path -> their segments. `counts_in`: the
    cache folder where the service keeps its token counts (service/engine_setup/kept_counts.py), taught
    to the counter before a replay (and its forked workers) would count those texts again.
    """
    results: dict[str, dict] = {}
    todo: list[tuple[TranscriptFile, list[int]]] = []
    for tf in files:
        fp = fingerprints[tf.path] if fingerprints is not None and tf.path in fingerprints else fingerprint(tf.path)
        hit = cache.get(tf.path, fp)
        if hit is not None:
            results[tf.path] = hit
        elif fp is not None:
            todo.append((tf, fp))
    cache.prune(tf.path for tf in files)
    if not todo:
        if meanwhile:
            meanwhile()
        return results
    if counts_in is not None and replay is not None and replay[1]:
        from service.engine_setup.kept_counts import NAME, learn_once

        learn_once(counts_in / NAME)
    todo.sort(key=lambda x: -x[1][1])  # biggest first: the workers finish together
    total_bytes = sum(fp[1] for _, fp in todo)
    fps = {tf.path: fp for tf, fp in todo}
    workers = workers if workers is not None else (os.cpu_count() or 1)
    jobs = [tf for tf, _ in todo]
    done_files = done_bytes = 0

    def collect(item):
        nonlocal done_files, done_bytes
        path, result, new_sizes, segments = item
        if segments is not None and replayed is not None:
            replayed[path] = segments
        done_files += 1
        done_bytes += fps[path][1]
        if isinstance(result, str):
            if skipped is not None:
                skipped[path] = result
            result = None
        if result is not None:
            settle(result, lazy_counter)
            results[path] = result
            cache.put(path, fps[path], result)
            if on_result:
                on_result(path, result)
        if new_sizes:
            cache.sizes.update(new_sizes)
            cache.dirty = True
        if progress:
            progress(done_files, len(todo), done_bytes, total_bytes)

    if pool_min_bytes is None:
        pool_min_bytes = forked.min_bytes(forked.POOL_MIN_BYTES)  # spawned workers cost more to start
    if workers > 1 and len(todo) > 1 and total_bytes >= pool_min_bytes and forked.available():
        # The replay's workers count tokens (what Read, Write and Edit put in the context): over a real history
        # each would count in Python until its budget ran out, then build tiktoken's encoder (0.15-0.25 s), so
        # forked ones share one built here and count all their results' texts with it, placeholder outputs
        # and subagents' edits included, where the parent counted those after them (decisions 273, 460). Over
        # a small history they may never need it, and building it first would make them wait.
        count_here = (replay is not None and bool(replay[1]) and forked.start_method() == "fork"
                      and total_bytes >= SHARED_ENCODER_MIN_BYTES)
        if count_here:
            from service.engine_setup.engines import share_encoder

            share_encoder()
        init = functools.partial(init_worker, cache.sizes, max_line, replay, count_here)
        with collector_paused(), forked.pool(scan_one, jobs, workers, init=init) as scanned:
            if not count_here:
                load_tokenizer()
            if meanwhile:
                meanwhile()
            for item in scanned:
                collect(item)
    else:
        if meanwhile:
            meanwhile()
        init_worker(cache.sizes, max_line, replay)
        with collector_paused():
            for job in jobs:
                collect(scan_one(job))
    return results


@contextmanager
def collector_paused():
    """No cyclic garbage collection while a scan builds its results (and a report sums them).

    They are large and acyclic, yet each collection walks all of them again:
    unpickling the workers' results took 0.055 s with the collector on and
    0.015 s with it off, summing them 0.079 s against 0.050 s (500 MB corpus).
    Forked workers inherit the setting.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class ProgressPrinter:
    """Progress on stderr: only on a terminal, or once a scan has run for a while."""

    def __init__(self, stream, *, after_s: float = 2.0):
        self.stream = stream
        self.start = time.monotonic()
        self.after_s = after_s
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.shown = False
        self._last = 0.0

    def __call__(self, done: int, total: int, done_bytes: int, total_bytes: int) -> None:
        now = time.monotonic()
        if not self.tty and now - self.start < self.after_s:
            return
        if now - self._last < 0.2 and done < total:
            return
        self._last = now
        end = "\r" if self.tty else "\n"
        self.stream.write(f"scanning transcripts: {done}/{total} files, {done_bytes / 1e6:.0f}/{total_bytes / 1e6:.0f} MB{end}")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()
