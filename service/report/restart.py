"""What restarting would have saved over a period: the segments' counterfactual summed (docs/measurement.md 14).

Each segment's figures come from the engine (`restart_savings` of its profile,
or of a live snapshot for a segment still open). Here they are only counted
by day and summed, for `ctxlamp report`, the Overview and the team push.

`ctxlamp report` with no service running replays the main transcripts with the engine to get them, as
`ctxlamp replay` does (bundled prices with the user's override, the default
selection), with a per-file cache so a transcript is replayed again only when it
changed: the figures of the report are those anyone can recompute from
`ctxlamp replay --jsonl`.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from math import fsum
from pathlib import Path
from typing import Any

CACHE_VERSION = 5  # 2: a segment keeps its rent and reminders; 3: misses priced, and the schedules; 4: the
# followed schedule takes the cache notice's move at a break; 5: a resumed transcript is its own session
LABEL = "estimated"
DEFINITION = ("per segment: a restart after call k with a handoff of B_default(k) saves "
              "(totalStock(k) - B_default(k)) x what each later call paid per prompt token (its cache-read "
              "price, or its cache-write price where it missed the cache), less "
              "B_default(k) x (5-minute cache-write price - cache-read price); one restart per segment "
              "(a second restart's extra is left out)")
SCHEDULE_DEFINITION = ("per segment: best_usd, the best schedule of restarts and /compacts in hindsight; "
                       "best_restarts_only_usd, of restarts alone; followed_usd, what a user who takes the move "
                       "each notice names would have saved (the counterfactual session's own notices, the notice "
                       "gap included); capture = followed / best; dead weight priced as in `definition`")


def _day(ts: Any) -> str | None:
    from service.report.summary import day_of

    return day_of(ts)


def figures_of(row: dict) -> dict | None:
    """A profile's or snapshot's `restart_savings`, or None when it has none (an older profile)."""
    got = row.get("restart_savings")
    return got if isinstance(got, dict) else None


def block(segments: Iterable[dict], live: Iterable[dict], since: str | None, until: str | None,
          day_of: Callable[[Any], str | None] = _day) -> dict:
    """The period's sums: segments that ended in it (profiles) plus the open ones (live snapshots).

    A live segment whose profile is also given (the same session and segment) counts once, live; one
    with no call yet is no segment, as the engine archives none for it.
    """
    rows: dict[tuple[Any, Any], tuple[str | None, dict]] = {}
    for p in segments:
        rows[(p.get("session_id"), p.get("segment"))] = (day_of(p.get("ended_at") or p.get("started_at")), p)
    for s in live:
        if (figures_of(s) or {}).get("calls") != 0:
            rows[(s.get("session_id"), s.get("segment"))] = (day_of(s.get("updated_at")), s)
    first: list[float] = []
    compact_first: list[float] = []
    best: list[float] = []
    missed: list[float] = []
    rent: list[float] = []
    counted = reminded = missed_n = laps = 0
    schedules: list[dict] = []
    for _key, (day, row) in sorted(rows.items(), key=lambda kv: str(kv[0])):
        fig = figures_of(row)
        if fig is None or day is None or (since and day < since) or (until and day > until):
            continue
        counted += 1
        rent.append(float(row.get("rent_usd", row.get("bill_cycle_usd")) or 0.0))  # a profile's, a snapshot's
        laps += int(row.get("laps") or 0)
        best.append(float(fig.get("best_usd") or 0.0))
        if isinstance(fig.get("schedule"), dict):
            schedules.append(fig["schedule"])
        if fig.get("first_reminder_call") is not None:
            reminded += 1
            first.append(float(fig.get("first_reminder_usd") or 0.0))
            compact_first.append(float(fig.get("compact_first_reminder_usd") or 0.0))
        elif (fig.get("best_usd") or 0.0) > 0:
            missed_n += 1
            missed.append(float(fig["best_usd"]))
    best_with_reminders = fsum(best) - fsum(missed)
    return {
        "label": LABEL,
        "first_reminder_usd": round(fsum(first), 9),
        "compact_first_reminder_usd": round(fsum(compact_first), 9),
        "best_single_usd": round(fsum(best), 9),
        "missed_usd": round(fsum(missed), 9),
        "segments": counted,
        "segments_with_reminders": reminded,
        "missed_segments": missed_n,
        "rent_usd": round(fsum(rent), 9),  # rent on dead weight over the same segments
        "reminders": laps,
        "capture": round(fsum(first) / best_with_reminders, 6) if best_with_reminders > 0 else None,
        "definition": DEFINITION,
        "schedule": schedule_sums(schedules),
    }


def schedule_sums(rows: list[dict]) -> dict:
    """The segments' schedules summed (segments without one, from before they existed, left out)."""
    def total(name: str) -> float:
        return round(fsum(float(r.get(name) or 0.0) for r in rows), 9)

    def count(name: str) -> int:
        return sum(int(r.get(name) or 0) for r in rows)

    best, followed = total("best_usd"), total("followed_usd")
    return {"best_usd": best, "best_restarts_only_usd": total("best_restarts_only_usd"), "followed_usd": followed,
            "capture": round(followed / best, 6) if best > 0 else None,
            "restarts_followed": count("restarts_followed"), "restarts_best": count("restarts_best"),
            "compactions_followed": count("compactions_followed"), "compactions_best": count("compactions_best"),
            "segments": len(rows), "label": LABEL, "definition": SCHEDULE_DEFINITION}


def median_calls_after_reminder(segments: Iterable[dict]) -> float | None:
    """How many calls this user's segments ran on after their first reminder (the median), or None."""
    runs = [int(f["calls_after_reminder"]) for f in (figures_of(p) for p in segments)
            if f is not None and f.get("first_reminder_call") is not None
            and isinstance(f.get("calls_after_reminder"), int)]
    return float(statistics.median(runs)) if runs else None


MISS_HISTORY_SEGMENTS = 5  # archived segments with their calls counted before the miss share is learnt


def advice_basis(segments: Iterable[dict]) -> tuple[Any, dict]:
    """What the priced moves assume, from this user's archived segments (docs/measurement.md 15):
    the horizon is the median run after a first reminder, the compaction's summary the median share its
    real compactions kept. (AdviceBasis, {"horizon": "history"|"default", "compact_keep": ...})."""
    from service.engine.advice import AdviceBasis

    rows = list(segments)
    horizon = median_calls_after_reminder(rows)
    keeps = [float(k) for k in ((figures_of(p) or {}).get("compaction_keep") for p in rows)
             if isinstance(k, (int, float)) and not isinstance(k, bool)]
    counted = [(f["calls"], f["missed_calls"]) for f in (figures_of(p) or {} for p in rows)
               if isinstance(f.get("calls"), int) and isinstance(f.get("missed_calls"), int) and f["calls"] > 0]
    calls = sum(c for c, _ in counted) if len(counted) >= MISS_HISTORY_SEGMENTS else 0
    default = AdviceBasis()
    basis = AdviceBasis(horizon_calls=max(1.0, horizon) if horizon is not None else default.horizon_calls,
                        compact_keep=float(statistics.median(keeps)) if keeps else default.compact_keep,
                        miss_share=sum(m for _, m in counted) / calls if calls else default.miss_share).bounded()
    return basis, {"horizon": "history" if horizon is not None else "default",
                   "compact_keep": "history" if keeps else "default",
                   "miss_share": "history" if calls else "default"}


# ---- the report's own replay of the transcripts ---------------------------------------------------

MALFORMED = object()  # Replay.feed_buffer's mark of a line that is not a JSON object

# The entry types the report's scan may parse (service/report/scan.py's wanted_lines): a line of one of
# these the engine decoded is handed to the scan, which then does not decode it again.
SCANNED_TYPES = frozenset(("assistant", "user", "system"))
# A line that opens with these bytes has its top-level type right after them for the scan's byte rule
_TYPED, _COST_STATE = b'{"type":"', b'cost-state"'


class Replay:
    """One main transcript replayed from the lines another reader (the scan's worker) splits: `feed_buffer`
    takes each buffer of whole lines, `segments` closes the replay. Only what the restart figures need is
    kept (`call_rows=False`, `restart_only=True`): the figures are those of `ctxlamp replay`."""

    def __init__(self, path: str, prices: Any, *, engine: Any = None,
                 on_entry: Callable[[dict], None] | None = None) -> None:
        """`engine`: another engine to feed (the service's history keeps whole profiles); `on_entry` sees
        each entry the engine took, as the service's turn records see the entries of a live session."""
        from service.engine_setup.engines import new_engine, shared_counter

        self.engine = engine if engine is not None else new_engine(
            path, prices, counter=shared_counter(), full_events=False, call_rows=False, restart_only=True)
        self.on_entry = on_entry
        self._long_lines = 0
        self.malformed = 0  # lines that are not JSON objects, counted where `ctxlamp replay` counts them

    def feed_buffer(self, data: bytes, stop: int, long_lines: int) -> tuple[dict[int, Any], list[tuple[int, int]]]:
        """Feed the whole lines of data[:stop] to the engine, as replay_file feeds them; `long_lines` is the
        splitter's count of over-long lines so far (replay_file feeds each as an empty line: skipped).

        A line the engine's parser skips by its opening bytes (service/engine/parse.py) is never copied
        out: a third of a transcript's bytes. Returns (decoded, lines): start -> entry for the lines of
        SCANNED_TYPES it decoded, and start -> MALFORMED for those that are not JSON objects, so the scan
        reads them from here; and the (start, end) of every line the scan's byte rule (its wanted_lines)
        must still judge, in order, so the scan neither splits the buffer again nor looks at the lines
        this walk already knows it leaves: blank lines, and those that open with `{"type":"` and a type
        the parser skips other than cost-state (the rule's top-level type, none it keeps).
        """
        from service.engine.parse import SKIP_AT, Malformed, decode_line

        engine = self.engine
        engine.skipped_lines += long_lines - self._long_lines
        self._long_lines = long_lines
        ingest, skipped_at, on_entry = engine.ingest, SKIP_AT.match, self.on_entry
        decoded: dict[int, Any] = {}
        lines: list[tuple[int, int]] = []
        find, startswith, keep = data.find, data.startswith, lines.append
        pos = 0
        while pos < stop:
            end = find(b"\n", pos, stop)
            start, pos = pos, end + 1
            if skipped_at(data, start, end) is not None:
                if not startswith(_TYPED, start) or startswith(_COST_STATE, start + len(_TYPED)):
                    keep((start, end))
                continue
            line = data[start:end]
            if not line.strip():
                continue
            keep((start, end))
            try:  # SessionEngine.feed_line, with the parse apart: the scan counts what does not parse
                entry = decode_line(line)
            except Malformed:
                engine.skipped_lines += 1
                self.malformed += 1
                decoded[start] = MALFORMED
                continue
            try:
                ingest(entry)
            except Malformed:  # a JSON object of a shape the engine cannot read: its own count only
                engine.skipped_lines += 1
            else:
                if on_entry is not None:
                    on_entry(entry)
            if entry.get("type") in SCANNED_TYPES:
                decoded[start] = entry
        engine.drain_events()  # a reminder event now and then: nothing here reads them
        return decoded, lines

    def at_end(self, held_back: int, long_lines: int) -> None:
        """The reader's splitter at the end of the file: an unfinished last line of `held_back` bytes (held
        back, as replay_file holds it) and its count of over-long lines."""
        self.engine.skipped_lines += long_lines - self._long_lines
        self._long_lines = long_lines
        self.engine.held_back_bytes = held_back

    def segments(self) -> list[dict]:
        """Close the replay (after `at_end`): what the report keeps of each segment's profile."""
        self.engine.finish("end")
        return [{k: p.get(k) for k in KEPT} for p in self.engine.profiles]


def _replay_one(job: tuple[str, Any, int | None]) -> tuple[str, list[dict]]:
    """One main transcript's segments (what the report keeps of each profile); unreadable: none."""
    from service.engine import LineSplitter
    from service.ingest.transcript_file import Skipped, chunks

    path, prices, max_line = job
    try:
        replay = Replay(path, prices)
        splitter = LineSplitter() if max_line is None else LineSplitter(max_line)
        for chunk in chunks(path, 1 << 20):
            data, stop = splitter.feed_buffer(chunk)
            replay.feed_buffer(data, stop, splitter.long_lines)
        replay.at_end(splitter.pending, splitter.long_lines)
        return path, replay.segments()
    except (Skipped, OSError):
        return path, []


KEPT = ("session_id", "segment", "started_at", "ended_at", "end_reason", "restart_savings", "rent_usd", "laps")


def _modified_before(path: str, since: str | None) -> bool:
    """The file was last written before the period: none of its segments can have ended in it."""
    import os
    from datetime import UTC, datetime

    if not since:
        return False
    try:
        day = datetime.fromtimestamp(os.stat(path).st_mtime, UTC).date().isoformat()
    except (OSError, ValueError, OverflowError):
        return False
    return day < since


def load_cache(cache_file: Path | None) -> dict[str, Any]:
    """path -> {"fp", "segments"} from the report's replay cache (empty when missing, stale or unreadable)."""
    import orjson

    if cache_file is None:
        return {}
    try:
        doc = orjson.loads(cache_file.read_bytes())
    except (OSError, ValueError):
        return {}
    if isinstance(doc, dict) and doc.get("version") == CACHE_VERSION:
        files = doc.get("files") or {}
        return files if isinstance(files, dict) else {}
    return {}


def _plan(paths: list[str], cache: dict[str, Any], fingerprint: Callable[[str], Any],
          since: str | None) -> tuple[dict[str, Any], list[tuple[int, str, Any]]]:
    """(entries kept from the cache, (size, path, fingerprint) of the files to replay)."""
    fresh: dict[str, Any] = {}
    todo: list[tuple[int, str, Any]] = []
    for path in sorted(paths):
        fp = fingerprint(path)
        hit = cache.get(path)
        if hit is not None and hit.get("fp") == fp:
            fresh[path] = hit
        elif hit is not None and _modified_before(path, since):
            fresh[path] = hit  # changed, but outside the period: kept as it was
        elif not _modified_before(path, since):
            size = fp[1] if isinstance(fp, list) and len(fp) > 1 else 0
            todo.append((size, path, fp))
    return fresh, todo


def to_replay(paths: list[str], cache: dict[str, Any], fingerprint: Callable[[str], Any],
              since: str | None = None) -> set[str]:
    """Which of these main transcripts `replayed_segments` would replay (so a scan can do it as it reads them)."""
    return {path for _, path, _ in _plan(paths, cache, fingerprint, since)[1]}


def replayed_segments(paths: list[str], prices: Any, cache_file: Path | None,
                      fingerprint: Callable[[str], Any], max_line: int | None = None, *,
                      since: str | None = None, workers: int | None = None,
                      cache: dict[str, Any] | None = None, replayed: dict[str, list[dict]] | None = None,
                      share_from: int | None = None) -> list[dict]:
    """Every segment profile of these main transcripts, replayed (cached by each file's fingerprint).

    Files last written before `since` are not replayed (their cached segments are kept). `cache`:
    the cache file's entries when the caller loaded them already; `replayed`: segments of files
    replayed already (by the scan, as it read them). The others to replay are shared among forked
    workers when there are enough bytes of them; from `share_from` bytes they share tiktoken's encoder,
    built before they fork (the scan's `SHARED_ENCODER_MIN_BYTES`, decision 510).
    """
    import os

    import orjson

    from service.report import forked

    if cache is None:
        cache = load_cache(cache_file)
    fresh, todo = _plan(paths, cache, fingerprint, since)
    fps = {path: fp for _, path, fp in todo}
    done = [(path, replayed[path]) for _, path, _ in todo if replayed is not None and path in replayed]
    todo = [t for t in todo if replayed is None or t[1] not in replayed]
    todo.sort(key=lambda t: (-t[0], t[1]))  # biggest first: the workers finish together
    jobs = [(path, prices, max_line) for _, path, _ in todo]
    workers = workers if workers is not None else (os.cpu_count() or 1)
    total = sum(t[0] for t in todo)
    if workers > 1 and len(jobs) > 1 and forked.available() and total >= forked.POOL_MIN_BYTES:
        if share_from is not None and total >= share_from:
            from service.engine_setup.engines import share_encoder

            share_encoder()
        with forked.ForkedMap(_replay_one, jobs, workers) as results:
            done += list(results)
    else:
        done += [_replay_one(job) for job in jobs]
    for path, segs in done:
        fresh[path] = {"fp": fps[path], "segments": segs}
    if cache_file is not None and fresh != cache:
        from service.client.privdir import write_private

        write_private(cache_file, orjson.dumps({"version": CACHE_VERSION, "files": fresh}), durable=False)
    return [seg for path in sorted(fresh) for seg in fresh[path]["segments"]]
