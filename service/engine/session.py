"""One session's measurement: entries in, replay events and status snapshots out.

docs/measurement.md is the contract; section numbers in comments refer to it.
Pure: the caller hands in prices, a token counter and a path predicate, and
the only clock is the entries' own timestamps.

One module of about 700 lines on purpose: SessionEngine is one state machine
(segments, stock, laps, rent) whose every step reads the same state; cut in
parts, one invariant would be spread over files.
"""
from __future__ import annotations

import fnmatch
import math
import posixpath
import re
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, cast

from service.engine.advice import AdviceBasis, MovePrices
from service.engine.branches import PROMPT, Fork, LiveBranch
from service.engine.compactions import boundary_trigger, is_idle_note
from service.engine.curve import Curve
from service.engine.model_mix import ModelMix
from service.engine.parse import Entry, Malformed, human_prompt, parse_line
from service.engine.moves import SegmentMoves, compacted_from
from service.engine.prices import Price, PriceTable, call_label, family_of, modifier_value, split_label
from service.engine.restart_savings import RestartLedger, restart_now
from service.engine.schedule import ScheduleCall, ScheduleLedger, break_move, reminder_interval
from service.client.payloads import Cache, Lamp, LastReminder, RestartSavings, Skeleton, Snapshot
from service.engine.tokens import TokenCounter
from service.engine.window import SlidingSum, rounded_sum

_EDIT_TOOLS = ("Edit", "MultiEdit")
_FILE_TOOLS = ("Read", "Write", "Edit", "MultiEdit")
# Claude Code's idle compaction (2.1.332): on a 1-hour cache, at 0.9 of the TTL after the last call, for a
# prompt of at least 200k tokens (its CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS default)
IDLE_COMPACT_AT, IDLE_COMPACT_MIN_TOKENS = 0.9, 200_000


@dataclass
class EngineConfig:
    g_floor: float = 500.0
    eps_amber: float = 0.05
    eps_crit: float = 0.20
    ratios: dict[str, float] = field(default_factory=dict)  # model family -> Claude/o200k ratio
    exclude_globs: tuple[str, ...] = ()
    br_window_s: float = 1800.0
    advice: AdviceBasis = AdviceBasis()  # what the priced moves assume (section 15): the user's history or defaults

    def ratio(self, family: str | None) -> float:
        return float(self.ratios.get(family or "", 1.0))


def _parse_time(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _tokens(usage: dict[str, Any], name: str) -> int:
    v = usage.get(name, 0)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v:
        raise Malformed(f"usage.{name} is not a token count")
    return int(v)


def _kept_verbatim(meta: dict[str, Any]) -> list[str]:
    """Uuids of the messages a compaction kept as they were ("Summarize from/up to here")."""
    kept = meta.get("preservedMessages")
    uuids: list[str] = []
    if isinstance(kept, dict):
        for name in ("allUuids", "uuids"):
            if isinstance(kept.get(name), list):
                uuids.extend(u for u in kept[name] if isinstance(u, str))
    segment = meta.get("preservedSegment")
    if isinstance(segment, dict):
        uuids.extend(segment[k] for k in ("headUuid", "tailUuid") if isinstance(segment.get(k), str))
    return uuids


def _block_text(content: object) -> str:
    """Text of a tool_result block's content (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


@dataclass
class _Call:
    key: str
    index: int  # 1-based, session-wide
    segment: int
    t: float | None
    model: str
    inn: int
    cw5: int
    cw1h: int
    cr: int
    out: int
    B0: float = 0.0
    rho: float = 0.0
    drent: float = 0.0
    interval: float = 0.0
    bill_in: float = 0.0
    bill_out: float = 0.0
    pos: int = -1  # place in its segment's calls
    cum_in: float = 0.0  # the segment's bill up to and including this call, summed in call order
    cum_out: float = 0.0
    timed: int = -1  # place among its segment's timed calls (the burn rate's window), -1 without a time
    speed: str | None = None  # usage.speed when not standard (a fast call's model is its `-fast` label)
    geo: str | None = None  # usage.inference_geo when not standard ("us")

    @property
    def total(self) -> int:
        return self.inn + self.cw5 + self.cw1h + self.cr + self.out

    @property
    def stock(self) -> int:
        return self.inn + self.cw5 + self.cw1h + self.cr


_ToolEvent = tuple[str, str, list[Any]]  # ("set", path, [text]) or ("edit", path, [(old, new), ...])


@dataclass
class _Segment:
    index: int
    floor: int | None = None
    model: str | None = None  # the current model: the latest call's (a /model switch changes it)
    geo: str | None = None  # the current model's inference geography: its rates depend on it
    price: Price | None = None  # the current model's price, and its source and family
    price_source: str | None = None
    family: str | None = None
    mix: ModelMix = field(default_factory=ModelMix)
    calls: list[_Call] = field(default_factory=list)
    turns: int = 0
    L: int = 0
    L_peak: int = 0
    contrib: dict[str, int] = field(default_factory=dict)
    contrib_version: int = 0
    queued: list[_ToolEvent] = field(default_factory=list)  # tool events waiting for the model
    bill_in: float = 0.0
    bill_out: float = 0.0
    bill_cycle: float = 0.0
    phase: float = 0.0
    laps: int = 0
    started_t: float | None = None
    last_t: float | None = None
    contrib_total: int = 0  # sum of contrib, kept as it changes
    selected_total: int = 0  # sum of the selected paths' contrib under selected_basis
    selected_basis: tuple[int, str | None] | None = None  # (selection version, cwd); None: sum afresh
    timed_t: list[float] = field(default_factory=list)  # times of the timed calls, in call order
    timed_max: list[float] = field(default_factory=list)  # running maximum of timed_t (bisected)
    timed_drent: SlidingSum = field(default_factory=SlidingSum)  # their rent increments, kept as revisions top up
    timed_in_order: bool = True  # timed_t never went back
    restart: RestartLedger = field(default_factory=RestartLedger)  # section 14
    schedule: ScheduleLedger = field(default_factory=ScheduleLedger)  # section 14's schedules
    compacted_from: tuple[float, float, float | None] | None = None  # the /compact before: (pre, floor, post)


_SESSION_FILE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl")


def file_name(transcript: str) -> str:
    """The transcript's file name, its folders cut at either separator (a Windows path has backslashes)."""
    return re.split(r"[\\/]", transcript)[-1]


def own_session_id(transcript: str) -> str | None:
    """The session a transcript's name says it holds (Claude Code names it `<session id>.jsonl`), or None
    for a file named otherwise (a copy, a fixture): then its first entry's `sessionId` names it."""
    name = file_name(transcript)
    return name[:-6] if _SESSION_FILE.fullmatch(name) else None


class SessionEngine:
    """The measurement of one session (one main transcript)."""

    def __init__(self, transcript: str, prices: PriceTable, counter: TokenCounter,
                 config: EngineConfig | None = None,
                 path_exists: Callable[[str], bool] | None = None, full_events: bool = True,
                 call_rows: bool = True, restart_only: bool = False) -> None:
        self.transcript = transcript
        # True: a segment's profile keeps only what the report's replay keeps (its restart figures, rent and
        # laps), so closing a segment or the replay takes no snapshot: the same figures. Nor does such an
        # engine keep what only snapshots and events read: the burn rate's window and the reminders
        # (their laps are counted, and the first marked for the restart figures)
        self.restart_only = restart_only
        self.full_events = full_events  # False: call events carry the series row only (the service's replay)
        # False: no snapshot, series row or call event per call, only the segment profiles and the end
        # event (the report's replay, which keeps nothing else): the same figures, a quarter less work
        self.call_rows = call_rows
        self.prices = prices
        self.counter = counter
        self.config = config or EngineConfig()
        self._path_exists = path_exists or (lambda _p: True)
        self.session_id: str | None = None
        self._own_id = own_session_id(transcript)  # None: the file is not named as Claude Code names a session
        self.cwd: str | None = None
        self.skipped_lines = 0
        self.held_back_bytes = 0  # an unfinished last line the reader is holding (set by the reader)
        self.transcript_missing = False
        self.excluded: set[str] = set()
        self._exists_cache: dict[str, bool] = {}
        self._selection_version = 0
        self._b_default_key: tuple[Any, ...] | None = None
        self._b_default = 0.0
        self._calls: dict[str, _Call] = {}
        self._anon = 0
        self._seg = _Segment(index=0)
        self._turns = 0
        self._turn_pending = False
        self._tool_uses: dict[str, tuple[str, dict[str, Any], str | None]] = {}
        self._pending_line: _Call | None = None  # call whose replay line waits for its revisions
        self._events: list[dict[str, Any]] = []
        self._reminders_waiting: list[LastReminder] = []
        self.last_reminder: LastReminder | None = None
        self.series: list[dict[str, Any]] = []
        self.resets: list[dict[str, Any]] = []
        self.compactions: dict[str, int] = {"manual": 0, "auto": 0, "idle": 0}  # by who started them
        self._last_trigger: str | None = None  # the latest compaction's, while no call has come since it
        self.rewinds: list[dict[str, Any]] = []  # {call, at, segment} of each continuation from an ancestor
        self._branch = LiveBranch()
        self.reminders: list[dict[str, Any]] = []
        self.profiles: list[dict[str, Any]] = []
        self._last_t: float | None = None
        self._finished = False

    # ---- input -------------------------------------------------------------------

    def feed_line(self, line: bytes) -> Entry | None:
        """Parse and ingest one complete line. Malformed lines are counted and skipped.

        Returns the parsed entry (for other readers such as the channels), or None.
        """
        try:
            entry = parse_line(line)
            if entry is not None:
                self.ingest(entry)
            return entry
        except Malformed:
            self.skipped_lines += 1
            return None

    def ingest(self, e: Entry) -> None:
        """Interpret one parsed entry (docs/measurement.md section 2)."""
        if e.get("isSidechain") is True:
            return  # sub-agent context: no evidence of any kind
        kind = e.get("type")
        prompt = human_prompt(e) if kind == "user" else None  # the tree and the turns both ask
        if "uuid" in e:  # attachments and the like are links of the chain too
            self._follow(e, kind, prompt is not None)
        if kind not in ("assistant", "user", "system"):
            return
        self._note_identity(e)
        t = _parse_time(e.get("timestamp"))
        if t is not None:
            self._last_t = t
        if kind == "assistant":
            self._last_trigger = None  # a call came: a later note is about no compaction of ours
            self._assistant(e, t)
        elif kind == "user":
            self._user(e, prompt)
        elif e.get("subtype") == "compact_boundary":
            self._reset(e, t)
        elif self._last_trigger is not None and is_idle_note(e):
            self._idle_note()

    def _note_identity(self, e: Entry) -> None:
        if self.session_id is None and isinstance(e.get("sessionId"), str):
            self.session_id = self._own_id or e["sessionId"]  # a resumed file opens with another session's copies
        if self.cwd is None and isinstance(e.get("cwd"), str):
            self.cwd = e["cwd"]

    # ---- the live branch (rewinds) --------------------------------------------------------

    def _follow(self, e: Entry, kind: object, prompt: bool) -> None:
        """Place the entry on the conversation's tree; a continuation from an ancestor is a rewind.
        `prompt`: the entry is a human prompt (parse.human_prompt)."""
        if kind == "system" and e.get("subtype") == "compact_boundary":
            return  # the reset makes it the new root
        if kind == "progress":  # written for running tools while the conversation goes on: never a rewind
            self._branch.enter(e["uuid"], e.get("parentUuid"), 0, can_fork=False)
            return
        mark = 0
        if kind == "user":
            mark = PROMPT if prompt else 0
        elif kind == "assistant":
            msg = e.get("message")
            if isinstance(msg, dict) and isinstance(msg.get("usage"), dict) and msg.get("model") != "<synthetic>":
                key = msg.get("id") if isinstance(msg.get("id"), str) else e.get("requestId")
                mark = self._branch.response_mark(key if isinstance(key, str) else "")
        fork = self._branch.enter(e["uuid"], e.get("parentUuid"), mark)
        if fork is not None:
            self._rewind(fork, _parse_time(e.get("timestamp")))

    def _rewind(self, fork: Fork, t: float | None) -> None:
        """Entries past the ancestor leave the context: their contributions leave B whole (and
        come back whole on a branch re-entered). Not a reset: g, wallet, cycle and turns go on."""
        self._emit_pending()  # the call before the rewind is reported as it stood
        seg = self._seg
        before = self.b_default()
        self._branch.take(fork, seg.contrib)
        seg.contrib_version += 1
        seg.contrib_total = sum(seg.contrib.values())  # many paths at once: summed afresh
        seg.selected_basis = None
        mark = {"call": len(self._calls), "at": _iso(t), "segment": seg.index}
        self.rewinds.append(mark)
        self._events.append({"event": "rewind", "session_id": self._session_id(), **mark,
                             "rewinds": len(self.rewinds), "left": len(fork.left), "taken": len(fork.taken),
                             "B_default_before": int(before), "B_default": int(self.b_default())})

    # ---- calls ---------------------------------------------------------------------------

    def _assistant(self, e: Entry, t: float | None) -> None:
        msg = e.get("message")
        if not isinstance(msg, dict):
            raise Malformed("assistant message is not an object")
        if isinstance(e.get("requestSessionId"), str) and e["requestSessionId"] != e.get("sessionId"):
            return  # a copy of a call billed in another session (a fork's history): the floor holds it
        if self._own_id is not None and isinstance(e.get("sessionId"), str) and e["sessionId"] != self._own_id:
            return  # the same, as an older Claude Code's resume copied it: under the session it came from
        content = msg.get("content")
        if isinstance(content, list):
            cwd = e.get("cwd") if isinstance(e.get("cwd"), str) else self.cwd
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    inp = block.get("input")
                    self._tool_uses[block["id"]] = (str(block.get("name", "")), inp if isinstance(inp, dict) else {}, cwd)
        usage = msg.get("usage")
        model = msg.get("model")
        if usage is None or model == "<synthetic>":
            return
        if not isinstance(usage, dict):
            raise Malformed("usage is not an object")
        cc = _tokens(usage, "cache_creation_input_tokens")
        breakdown = usage.get("cache_creation")
        if isinstance(breakdown, dict):
            cw1h = _tokens(breakdown, "ephemeral_1h_input_tokens")
            cw5 = _tokens(breakdown, "ephemeral_5m_input_tokens")
            if cw5 + cw1h != cc:  # keep the total honest when the breakdown disagrees
                cw5 = max(0, cc - cw1h)
        else:
            cw5, cw1h = cc, 0
        key = msg.get("id") if isinstance(msg.get("id"), str) else None
        if key is None and isinstance(e.get("requestId"), str):
            key = "req:" + e["requestId"]
        if key is None:
            self._anon += 1
            key = f"anon:{self._anon}"
        speed = modifier_value("speed", usage.get("speed"))
        call = _Call(key=key, index=0, segment=self._seg.index, t=t, model=call_label(str(model or ""), speed),
                     inn=_tokens(usage, "input_tokens"), cw5=cw5, cw1h=cw1h,
                     cr=_tokens(usage, "cache_read_input_tokens"), out=_tokens(usage, "output_tokens"),
                     speed=speed, geo=modifier_value("inference_geo", usage.get("inference_geo")))
        known = self._calls.get(key)
        if known is None:
            self._new_call(call)
        elif call.total >= known.total:
            self._revise(known, call)

    def _user(self, e: Entry, prompt: str | None) -> None:
        msg = e.get("message")
        if not isinstance(msg, dict):
            raise Malformed("user message is not an object")
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise Malformed("user content is neither text nor blocks")
        if isinstance(content, list):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if results:
                for block in results:
                    self._tool_result(block)
                return
        if prompt is None:
            return
        self._turn_pending = True  # announced; opens at the next call

    # ---- tool events (section 5) ----------------------------------------------------

    def _tool_result(self, block: dict[str, Any]) -> None:
        tool_use_id = block.get("tool_use_id")
        use = self._tool_uses.pop(tool_use_id, None) if isinstance(tool_use_id, str) else None
        if use is None or block.get("is_error") is True:
            return
        name, inp, cwd = use
        if name not in _FILE_TOOLS:
            return
        path = inp.get("file_path")
        if not isinstance(path, str) or not path:
            return
        if not path.startswith("/") and cwd:
            path = posixpath.normpath(posixpath.join(cwd, path))
        event: _ToolEvent
        if name == "Read":
            event = ("set", path, [_block_text(block.get("content"))])
        elif name == "Write":
            text = inp.get("content")
            event = ("set", path, [text if isinstance(text, str) else ""])
        else:
            edits = [inp] if name == "Edit" else inp.get("edits")
            pairs = []
            for ed in edits if isinstance(edits, list) else []:
                if isinstance(ed, dict):
                    old, new = ed.get("old_string"), ed.get("new_string")
                    pairs.append((old if isinstance(old, str) else "", new if isinstance(new, str) else ""))
            event = ("edit", path, pairs)
        if self._seg.model is None:
            self._seg.queued.append(event)  # tokenized once the next call fixes the model
        else:
            self._apply_tool_event(event)

    def _apply_tool_event(self, event: _ToolEvent) -> None:
        kind, path, payload = event
        seg = self._seg
        ratio = self.config.ratio(seg.family)  # the ratio in force now; never applied retroactively
        before = seg.contrib.get(path)
        if kind == "set":
            seg.contrib[path] = self.counter.tok(payload[0], ratio)
        else:
            c = before or 0
            for old, new in payload:
                c = max(0, c + self.counter.tok(new, ratio) - self.counter.tok(old, ratio))
            seg.contrib[path] = c
        after = seg.contrib[path]
        self._branch.record(path, before, after)  # undone whole if this branch is left
        seg.contrib_version += 1
        if path not in self._exists_cache:
            self._exists_cache[path] = bool(self._path_exists(path))
        change = after - (before or 0)
        seg.contrib_total += change
        if seg.selected_basis == (self._selection_version, self.cwd) and self._selected(path) is None:
            seg.selected_total += change  # the other paths' selection has not changed

    # ---- calls, folding, rent (sections 3, 6, 7, 9) ----------------------------------

    def _new_call(self, call: _Call) -> None:
        self._emit_pending()
        seg = self._seg
        if self._turn_pending:
            self._turn_pending = False
            self._turns += 1
            seg.turns += 1
        self._calls[call.key] = call
        call.index = len(self._calls)
        call.segment = seg.index
        opening = seg.model is None
        if not call.model and not opening:
            assert seg.model is not None  # not opening: the segment has a model
            # a call that names no model is the current model's (at its own speed), not a switch
            call.model = call_label(split_label(seg.model)[0], call.speed)
        if call.model != seg.model or call.geo != seg.geo:
            self._use_model(call.model, call.geo)
        if opening:
            seg.floor = call.stock
            self._moves().opened(seg)
            seg.started_t = call.t
            queued, seg.queued = seg.queued, []
            for event in queued:
                self._apply_tool_event(event)
        call.pos = len(seg.calls)
        seg.calls.append(call)
        if call.t is not None:
            seg.last_t = call.t
            if not self.restart_only:  # the burn rate's window, which only a snapshot reads
                self._time_call(call)
        self._observe(call)
        call.bill_in, call.bill_out = self._bill(call)
        seg.bill_in += call.bill_in
        seg.bill_out += call.bill_out
        call.cum_in, call.cum_out = seg.bill_in, seg.bill_out
        seg.mix.add(call)
        self._book_rent(call, first=True)
        self._pending_line = call

    def _time_call(self, call: _Call) -> None:
        """Enter a timed call in the burn rate's window (its times, their running maximum, its increment)."""
        seg = self._seg
        assert call.t is not None
        if seg.timed_max:
            if call.t < seg.timed_t[-1]:
                seg.timed_in_order = False
            seg.timed_max.append(max(seg.timed_max[-1], call.t))
        else:
            seg.timed_max.append(call.t)
        call.timed = len(seg.timed_t)
        seg.timed_t.append(call.t)
        seg.timed_drent.append(call.drent)

    def _use_model(self, model: str, geo: str | None) -> None:
        """The segment's opening model, or a /model switch: from this call on, its prices and family.

        Not a reset: B, turns, wallet and reminders carry on. The cache is per model and per speed
        (a fast call's model is its `-fast` label, so a speed switch is a model switch): the call
        writes anew what this model has not cached, and its own usage, bill and rent show that.
        Another inference geography changes the rates only.
        """
        seg = self._seg
        seg.model = model
        seg.geo = geo
        seg.price, seg.price_source = self.prices.lookup(model, geo=geo)
        seg.family = seg.price.family if seg.price else family_of(model)

    def _revise(self, known: _Call, new: _Call) -> None:
        """A later revision of a call already counted: update in place, top up the rent."""
        seg = self._seg
        old_cw5, old_cw1h = known.cw5, known.cw1h
        known.inn, known.cw5, known.cw1h, known.cr, known.out = new.inn, new.cw5, new.cw1h, new.cr, new.out
        if known.segment != seg.index:
            return  # a closed segment's figures never change the open one
        seg.mix.revised(known, old_cw5, old_cw1h)
        if seg.calls and seg.calls[0] is known:
            seg.floor = known.stock
        if seg.calls and seg.calls[-1] is known:
            seg.L = known.cr
        seg.L_peak = max(seg.L_peak, known.cr)
        known.bill_in, known.bill_out = self._bill(known)
        seg.mix.rebilled(known)
        self._resum_bill(known.pos)
        self._book_rent(known, first=False)

    def _resum_bill(self, pos: int) -> None:
        """The segment's bill after the call at `pos` changed: its running sums from there on.

        Summed again in call order, not adjusted by the difference, so folding gives to the bit
        what the final revision alone gives; a revision of the latest call (the usual one) costs
        one addition whatever the segment's length.
        """
        seg = self._seg
        calls = seg.calls
        cum_in, cum_out = (calls[pos - 1].cum_in, calls[pos - 1].cum_out) if pos > 0 else (0.0, 0.0)
        for call in calls[pos:]:
            cum_in += call.bill_in
            cum_out += call.bill_out
            call.cum_in, call.cum_out = cum_in, cum_out
        seg.bill_in, seg.bill_out = cum_in, cum_out

    def _observe(self, call: _Call) -> None:
        seg = self._seg
        seg.L = call.cr
        seg.L_peak = max(seg.L_peak, call.cr)

    def _bill(self, call: _Call) -> tuple[float, float]:
        # each call at its own model, speed and geography, whatever the segment's, and at the rates of its
        # own time (the line's)
        p, _ = self.prices.lookup_at(call.model, call.t, call.speed, call.geo)
        if p is None:
            return 0.0, 0.0
        p = p.for_prompt(call.stock)  # long-context rates apply to the whole request
        return (p.p_in * call.inn + p.p_w5 * call.cw5 + p.p_w1h * call.cw1h + p.p_r * call.cr, p.p_out * call.out)

    def _p_w(self) -> float:
        p = self._seg.price
        if p is None:
            return 0.0
        cw5, cw1h = self._seg.mix.writes(self._seg.model)  # the current model's cache
        return p.p_w1h if cw1h > cw5 else p.p_w5

    def _c_ratio(self) -> float:
        p, p_w = self._seg.price, self._p_w()
        return p.p_r / p_w if p is not None and p_w > 0 else 0.0

    def _g(self) -> float:
        calls = self._seg.calls
        if len(calls) < 2:
            return self.config.g_floor
        return max(self.config.g_floor, (calls[-1].stock - calls[0].stock) / (len(calls) - 1))

    def _book_rent(self, call: _Call, first: bool) -> None:
        """Rent of the call (section 9): a trapezoid increment into bill cycle and wallet."""
        seg = self._seg
        if first:
            call.B0 = self.b_default()
        stock = call.stock
        gate_open = call.B0 > 0 and self._c_ratio() > 0 and stock > 0
        rho = call.bill_in * max(0.0, stock - call.B0) / stock if gate_open else 0.0
        pos = call.pos
        prev_rho = seg.calls[pos - 1].rho if pos > 0 else 0.0
        drent = (prev_rho + rho) / 2 if gate_open else 0.0
        if first:
            call.rho, call.drent = rho, drent
            if gate_open:
                price = seg.price
                assert price is not None  # the gate opens only with a price (cRatio > 0)
                call.interval = reminder_interval(self._p_w(), price.p_r, call.B0, self._g(), stock)
            added = drent
        else:
            call.rho = max(call.rho, rho)
            added = max(0.0, drent - call.drent)
            call.drent += added
        if call.timed >= 0:
            seg.timed_drent[call.timed] = call.drent
        if added <= 0 or call.interval <= 0:
            seg.bill_cycle += max(0.0, added)
            return
        seg.bill_cycle += added
        seg.phase += added / call.interval
        if seg.phase >= 1.0:
            crossed = math.floor(seg.phase)
            seg.laps += crossed
            seg.phase -= crossed
            seg.restart.mark_reminder(call.index)
            last = seg.restart.last_call
            if last is not None and call.index <= last:  # a late revision of a call whose line is written
                self._count_compact(call)
            if self.restart_only:
                return  # the laps are counted; the reminder itself is for snapshots and events
            reminder: LastReminder = {"lap": seg.laps, "call": call.index, "at": _iso(call.t)}
            self.last_reminder = reminder
            self.reminders.append({"segment": seg.index, **reminder})
            if self.full_events:  # the replay contract: after the call's own line
                self._reminders_waiting.append(reminder)
            else:  # live: the user hears of it now, not when the next call arrives
                self._events.append(self._reminder_event(reminder))

    # ---- resets (section 4) ------------------------------------------------------------

    def _reset(self, e: Entry, t: float | None) -> None:
        self._emit_pending()
        self._archive("compact", t)
        meta = cast("dict[str, Any]", e.get("compactMetadata") if isinstance(e.get("compactMetadata"), dict) else {})
        closing = self._seg
        self._seg = _Segment(index=self._seg.index + 1)
        self._seg.compacted_from = compacted_from(closing.floor, closing.calls[-1].stock if closing.calls else None, meta)
        self._tool_uses.clear()
        self._branch.restart(e.get("uuid"), _kept_verbatim(meta))
        reset = {"event": "reset", "segment": self._seg.index, "at": _iso(t), "call": len(self._calls),
                 "trigger": meta.get("trigger"), "preTokens": meta.get("preTokens"),
                 "postTokens": meta.get("postTokens")}
        self.resets.append({k: reset[k] for k in ("call", "at", "segment")})
        self._last_trigger = boundary_trigger(meta)
        self.compactions[self._last_trigger] += 1
        self._events.append(reset)

    def _idle_note(self) -> None:
        """Claude Code says the compaction just written ran while the user was idle: counted as idle."""
        if self._last_trigger != "idle":
            self.compactions[self._last_trigger or "auto"] -= 1
            self.compactions["idle"] += 1
        self._last_trigger = "idle"

    # ---- selection and revaluation (section 5) -------------------------------------------

    def _selected(self, path: str) -> str | None:
        """None when the path is in the default selection, else why not."""
        if path in self.excluded:
            return "excluded"
        if any(fnmatch.fnmatch(path, g) for g in self.config.exclude_globs):
            return "excluded"
        cwd = self.cwd
        if not cwd or not (path == cwd or path.startswith(cwd.rstrip("/") + "/")):
            return "outside_cwd"
        if not self._exists_cache.get(path, True):
            return "missing"
        return None

    def b_default(self) -> float:
        seg = self._seg
        if seg.floor is None:
            return 0.0
        key = (id(seg), seg.floor, seg.contrib_version, self._selection_version)
        if self._b_default_key != key:
            self._b_default_key = key
            self._b_default = float(seg.floor + self._selected_total())
        return self._b_default

    def _selected_total(self) -> int:
        """Tokens of the selected paths: summed afresh only when the selection may have changed."""
        seg = self._seg
        basis = (self._selection_version, self.cwd)
        if seg.selected_basis != basis:
            seg.selected_total = sum(c for p, c in seg.contrib.items() if self._selected(p) is None)
            seg.selected_basis = basis
        return seg.selected_total

    def b_all(self) -> float:
        seg = self._seg
        return (seg.floor or 0) + seg.contrib_total

    def set_excluded(self, paths: set[str]) -> None:
        """Revaluation: later increments use the new baseline; nothing booked is withdrawn."""
        self.excluded = set(paths)
        self._selection_version += 1

    def recheck_paths(self) -> None:
        """Ask again which touched paths still exist (a revaluation)."""
        self._exists_cache = {p: bool(self._path_exists(p)) for p in self._exists_cache}
        self._selection_version += 1

    def set_config(self, config: EngineConfig) -> None:
        """New thresholds, g floor, ratios or exclusion globs (a revaluation: nothing booked changes)."""
        self.config = config
        self._selection_version += 1

    def set_prices(self, prices: PriceTable) -> None:
        """Price change (a revaluation): later calls and increments use the new table."""
        self.prices = prices
        seg = self._seg
        if seg.model is not None:
            seg.price, seg.price_source = prices.lookup(seg.model, geo=seg.geo)

    def path_rows(self) -> list[dict[str, Any]]:
        return [{"path": p, "tokens": c, "selected": self._selected(p) is None, "why": self._selected(p)}
                for p, c in sorted(self._seg.contrib.items())]

    # ---- output ----------------------------------------------------------------------

    def _emit_pending(self) -> None:
        call, self._pending_line = self._pending_line, None
        if call is None:
            return
        self._count_restart(call)
        if not self.call_rows:
            self._reminders_waiting.clear()
            return
        snap = self.snapshot(with_curve=self.full_events)
        row = self._series_row(snap, call)
        self.series.append(row)
        self._events.append({**snap, "event": "call", "key": call.key} if self.full_events
                            else {**row, "event": "call", "session_id": snap["session_id"]})
        for reminder in self._reminders_waiting:
            self._events.append(self._reminder_event(reminder))
        self._reminders_waiting.clear()

    def _restart_row(self, call: _Call) -> tuple[int, float, float, int, float, float]:
        """(call, read price, write price, totalStock, B_default, carry price) of a call for section 14: its own
        model, speed, geography and tier, and B_default as its replay line shows it."""
        p, _ = self.prices.lookup(call.model, call.speed, call.geo)
        tier = p.for_prompt(call.stock) if p is not None else None
        carry = 0.0
        if tier is not None:
            carry = tier.p_r
            written = call.inn + call.cw5 + call.cw1h
            if written > call.cr:  # a miss: more than half the prompt written again, at what it wrote
                carry = max(((call.inn, tier.p_in), (call.cw5, tier.p_w5), (call.cw1h, tier.p_w1h)))[1]
        return (call.index, tier.p_r if tier else 0.0, tier.p_w5 if tier else 0.0, call.stock,
                float(int(self.b_default())), carry)

    def _schedule_call(self, call: _Call) -> ScheduleCall | None:
        """The call as section 14's schedules read it; None without a price (it carries nothing priced)."""
        seg = self._seg
        p, _ = self.prices.lookup(call.model, call.speed, call.geo)
        if p is None or seg.price is None or seg.floor is None:
            return None
        tier = p.for_prompt(call.stock)
        index, _, _, stock, b0, carry = self._restart_row(call)
        rates = MovePrices(p_r=tier.p_r, p_w=tier.p_w1h if self._p_w_is_1h() else tier.p_w5, p_w5=tier.p_w5,
                           p_out=tier.p_out)
        return ScheduleCall(index, call.t, carry, rates, stock, b0, float(seg.floor), self._g(), call.bill_in,
                            seg.price.p_r, self._p_w(), float(self._ttl()))

    def _count_restart(self, call: _Call) -> None:
        """Feed the call, as its replay line shows it, to the segment's restart counterfactual (section 14)."""
        self._seg.restart.add_call(*self._restart_row(call))
        self._count_compact(call)
        row = self._schedule_call(call)
        if row is not None:
            self._seg.schedule.add_call(row, self.config.advice)

    def _restart_figures(self, pending: bool) -> RestartSavings:
        """The open segment's `restart_savings`, its schedules in it; `pending`: the latest call counted as it
        stands while its line waits (a snapshot), else the calls whose lines are written (a profile)."""
        seg = self._seg
        if not pending:
            return replace(seg.restart.figures(),
                           schedule=seg.schedule.figures(None, self.config.advice).as_dict()).as_dict()
        call = self._pending_line
        row = self._schedule_call(call) if call is not None and call.segment == seg.index else None
        figures = seg.restart.figures(self._restart_pending(), self._compact_pending())
        return replace(figures, schedule=seg.schedule.figures(row, self.config.advice).as_dict()).as_dict()

    def _count_compact(self, call: _Call) -> None:
        """A /compact after the segment's first reminder's call, once that call's line is written (section 14)."""
        if call.index == self._seg.restart.first_reminder:
            compact = self._moves().compact_at(call)
            if compact is not None:
                self._seg.restart.mark_compact(call.index, *compact)

    def _restart_pending(self) -> tuple[int, float, float, int, float, float] | None:
        """The latest call while its line waits for revisions: counted as it stands, not added."""
        call = self._pending_line
        if call is None or call.segment != self._seg.index:
            return None
        return self._restart_row(call)

    def _compact_pending(self) -> tuple[float, float] | None:
        """A /compact after the latest call while its line waits, when that call raised the first reminder."""
        call = self._pending_line
        if call is None or call.segment != self._seg.index or call.index != self._seg.restart.first_reminder:
            return None
        return self._moves().compact_at(call)

    def _moves(self) -> SegmentMoves:
        """The open segment's three moves, priced (section 15)."""
        return SegmentMoves(self._seg, self.prices, self.config.advice, self._p_w_is_1h())

    def _p_w_is_1h(self) -> bool:
        seg = self._seg
        cw5, cw1h = seg.mix.writes(seg.model)
        return cw1h > cw5

    def _ttl(self) -> int:
        """The prompt cache's life after a call (seconds): an hour where the segment writes that cache."""
        return 3600 if self._p_w_is_1h() else 300

    def restart_estimate(self, calls_ahead: float,
                         snapshot: Snapshot | dict[str, Any] | None = None) -> dict[str, float | None] | None:
        """What a restart after the latest call would save if `calls_ahead` more calls come (section 14).

        With `snapshot`, priced from its model, totalStock and B_default (the figures a reminder shows).
        """
        if snapshot is None:
            snapshot = self.snapshot(with_curve=False)
        model, stock = snapshot.get("model"), snapshot.get("totalStock")
        if not isinstance(model, str) or not isinstance(stock, int) or stock <= 0:
            return None
        p, _ = self.prices.lookup(model, geo=self._seg.geo)  # the model is the label: its speed with it
        if p is None:
            return None
        tier = p.for_prompt(stock)
        return restart_now(stock, float(snapshot.get("B_default") or 0), tier.p_r, tier.p_w5, calls_ahead)

    def _session_id(self) -> str:
        """The session's id; before its first entry names it, the one its file name says (decision 502)."""
        return self.session_id or self._own_id or file_name(self.transcript).removesuffix(".jsonl")

    def _reminder_event(self, reminder: LastReminder) -> dict[str, Any]:
        return {"event": "reminder", "session_id": self._session_id(), "segment": self._seg.index, **reminder}

    @staticmethod
    def _series_row(snap: Snapshot, call: _Call) -> dict[str, Any]:
        return {"call": call.index, "key": call.key, "at": _iso(call.t), "segment": snap["segment"],
                "totalStock": snap["totalStock"], "L": snap["L"], "B": snap["B"], "B_default": snap["B_default"],
                "x": snap["x"], "u": snap["u"], "xSweet": snap["xSweet"], "bp": snap["bp"],
                "bill_cycle_usd": snap["bill_cycle_usd"], "laps": snap["laps"], "lamp": snap["lamp"]["state"]}

    def live_series(self) -> list[dict[str, Any]]:
        """The per-call series including the call whose replay line is still pending."""
        if self._pending_line is None:
            return list(self.series)
        return [*self.series, self._series_row(self.snapshot(with_curve=False), self._pending_line)]

    def drain_events(self) -> list[dict[str, Any]]:
        events, self._events = self._events, []
        return events

    def snapshot(self, with_curve: bool = True) -> Snapshot:
        """The status snapshot now (section 10). Without the curve, the skeleton keeps only its landmarks."""
        seg, cfg = self._seg, self.config
        last = seg.calls[-1] if seg.calls else None
        stock = last.stock if last else 0
        b_def = self.b_default()
        b_all = self.b_all()
        g = self._g()
        p = seg.price
        p_w = self._p_w()
        c_ratio = self._c_ratio()
        gate_open = b_def > 0 and c_ratio > 0
        x = u = x_sweet = dhat = mf = pp = None
        skeleton = None
        br = None
        if gate_open:
            assert p is not None  # the gate opens only with a price (cRatio > 0)
            curve = Curve(p_w, p.p_r, b_def, g)
            n_star = curve.n_star
            x = stock / b_def
            x_sweet = 1 + g * n_star / b_def
            u = max(0.0, (x - 1) / (x_sweet - 1))
            dhat = (x_sweet - x) * b_def / g
            mf = (p.p_r * stock + p_w * g) / curve.a_star
            pp = 1 / (c_ratio * (x - 1)) if x > 1 else None
            skeleton = curve.skeleton(cfg.eps_amber, cfg.eps_crit, u, with_curve)
            br = self._burn_rate()
        lamp = self._lamp(gate_open, u, skeleton)
        ttl = self._ttl() if p is not None else 300
        limit = p.context_window if p is not None else 200_000
        return {
            "session_id": self._session_id(),
            "transcript": self.transcript,
            "project": self.cwd,
            "segment": seg.index,
            "calls": len(self._calls),
            "turns": self._turns,
            "model": seg.model,
            "price_source": seg.price_source,
            "totalStock": stock,
            "L": seg.L,
            "L_peak": seg.L_peak,
            "B": int(min(b_all, stock)),
            "B_default": int(b_def),
            "floor": seg.floor,
            "D": int(max(0, b_all - seg.L)),
            "g": g,
            "cRatio": c_ratio,
            "x": 1 if x is None else x,  # x is set exactly when the gate is open
            "xSweet": x_sweet,
            "u": u,
            "dhat": dhat,
            "mf": mf,
            "pp": pp,
            "bp": last.rho if last else 0.0,
            "br": br,
            "bill_cycle_usd": seg.bill_cycle,
            "wallet_phase": seg.phase,
            "laps": seg.laps,
            "lamp": lamp,
            "skeleton": skeleton,
            "reminder": self.last_reminder,
            "rewinds": len(self.rewinds),
            "restart_savings": self._restart_figures(True),
            "advice": self._moves().advice(last, b_def, g),
            "spend": {"bill_in_usd": seg.bill_in, "bill_out_usd": seg.bill_out},
            "window": {"tokens": stock, "limit": limit, "pct": 100.0 * stock / limit if limit else None},
            "cache": self._cache(ttl, stock, b_def, p_w, last, g),
            "compactions": {"manual": self.compactions["manual"], "auto": self.compactions["auto"],
                            "idle": self.compactions["idle"]},
            "skipped_lines": self.skipped_lines,
            "started_at": _iso(next(iter(self._calls.values())).t) if self._calls else None,
            "updated_at": _iso(self._last_t),
        }

    def _cache(self, ttl: int, stock: int, b_def: float, p_w: float, last: _Call | None, g: float) -> Cache:
        """The prompt cache and what a cold one costs: the next message rewrites the whole prompt, a fresh
        session with a handoff writes its useful part, the advice once it is cold and the move the cache
        notice names from it (section 16). On a 1-hour cache a long prompt is compacted by Claude Code at 0.9
        of the TTL after the last call, unless the user turned that off."""
        last_t = self._seg.last_t
        cold = self._moves().advice(last, b_def, g, cold=True)
        idle_at = idle_usd = None
        if ttl == 3600 and stock >= IDLE_COMPACT_MIN_TOKENS and last_t is not None and last is not None:
            priced = self._moves().compact_at(last)
            if priced is not None:
                idle_at, idle_usd = _iso(last_t + IDLE_COMPACT_AT * ttl), priced[1]
        return {"ttl_s": ttl, "expires_at": _iso(last_t + ttl) if last_t is not None else None,
                "cold_rewrite_usd": p_w * stock, "cold_rewrite_tokens": stock,
                "fresh_start_usd": p_w * b_def, "fresh_start_tokens": int(b_def),
                "idle_compact_at": idle_at, "idle_compact_usd": idle_usd,
                "cold_advice": cold, "break_move": break_move(cold) if cold is not None else None}

    def _lamp(self, gate_open: bool, u: float | None, skeleton: Skeleton | None) -> Lamp:
        if self.transcript_missing:
            return {"state": "no_transcript", "colour": "white", "reason": "the transcript file is gone"}
        if not gate_open:
            seg = self._seg
            if seg.model is None:
                why = "no call measured yet in this segment"
            elif seg.price is None:
                why = f"no price for model {seg.model}"
            else:
                why = "no positive baseline yet"
            return {"state": "insufficient_data", "colour": "white", "reason": why}
        assert u is not None and skeleton is not None  # the gate is open: both were computed
        if u < skeleton["u_mirror"]:
            return {"state": "warming", "colour": "white",
                    "reason": f"fresh context: u={u:.2f}, green from {skeleton['u_mirror']:.2f}"}
        if u < skeleton["u_amber"]:
            side = "before" if u < 1 else "past"
            return {"state": "good", "colour": "green", "reason": f"near the sweet spot ({side} it): u={u:.2f}"}
        if u < skeleton["u_crit"]:
            return {"state": "warning", "colour": "amber",
                    "reason": f"past the sweet spot: u={u:.2f}, a restart starts paying off"}
        return {"state": "critical", "colour": "red", "reason": f"far past the sweet spot: u={u:.2f}, restart now"}

    def _burn_rate(self) -> float | None:
        seg = self._seg
        if not seg.calls or seg.last_t is None:
            return None
        start = seg.last_t - self.config.br_window_s
        total = self._window_rent(start)
        first = seg.started_t if seg.started_t is not None else seg.last_t
        span = max(60.0, seg.last_t - max(start, first))
        return total * 3600.0 / span

    def _window_rent(self, start: float) -> float:
        """Rent of the timed calls at or after `start`: their exact sum, rounded once (the same in replay and live).

        No call before the first whose running maximum time reaches `start` can be in the window
        (a bisection); when times never went back, every call from there on is, and the sliding
        sum moves by the calls that entered and left the window since the last snapshot.
        """
        seg = self._seg
        first = bisect_left(seg.timed_max, start)
        if seg.timed_in_order:
            return seg.timed_drent.sum_from(first)
        return rounded_sum([d for t, d in zip(seg.timed_t[first:], seg.timed_drent.values[first:]) if t >= start])

    # ---- segment profiles (sections 5 settlement, 10) ------------------------------------

    def _archive(self, reason: str, t: float | None) -> dict[str, Any] | None:
        seg = self._seg
        if not seg.calls:
            return None
        ended = t if t is not None else seg.last_t
        if self.restart_only:
            lean = {"session_id": self._session_id(), "segment": seg.index, "started_at": _iso(seg.started_t),
                    "ended_at": _iso(ended), "end_reason": reason, "restart_savings": self._restart_figures(False),
                    "rent_usd": seg.bill_cycle, "laps": seg.laps}
            self.profiles.append(lean)
            return lean
        snap = self.snapshot(with_curve=False)  # the profile takes five figures, no curve
        b_all = self.b_all()
        floor = seg.floor or 0
        scale = 1.0
        if b_all > floor and (seg.L_peak - floor) / (b_all - floor) < 1:
            scale = max(0.0, (seg.L_peak - floor) / (b_all - floor))
        profile = {
            "session_id": snap["session_id"], "segment": seg.index,
            "started_at": _iso(seg.started_t), "ended_at": _iso(ended), "end_reason": reason,
            "model": seg.mix.opening_model(), "calls": len(seg.calls), "turns": seg.turns,
            "B": snap["B"], "L_peak": seg.L_peak, "g": snap["g"], "br": snap["br"], "mf": snap["mf"],
            "bill_in_usd": seg.bill_in, "bill_out_usd": seg.bill_out, "rent_usd": seg.bill_cycle,
            "laps": seg.laps, "restart_savings": self._restart_figures(False),
            "duration_s": (ended - seg.started_t) if ended is not None and seg.started_t is not None else 0.0,
            "path_totals": {p: int(math.floor(c * scale)) for p, c in sorted(seg.contrib.items())},
        }
        if len(seg.mix) > 1:  # a /model switch: each model's calls and spend (one model: the fields above)
            profile["models"] = seg.mix.listed()
        self.profiles.append(profile)
        return profile

    def finish(self, end_reason: str = "end") -> dict[str, Any] | None:
        """Close the open segment (end of replay, rotation, shutdown) and queue the end event."""
        if self._finished:
            return None
        self._finished = True
        self._emit_pending()
        profile = self._archive(end_reason, self._seg.last_t)
        self._events.append({"event": "end", "segments": list(self.profiles),
                             "status": None if self.restart_only else self.snapshot(),
                             "skipped_lines": self.skipped_lines, "held_back_bytes": self.held_back_bytes})
        return profile

    def ledger_state(self) -> dict[str, Any]:
        """What the rent ledger checkpoint keeps for this session."""
        seg = self._seg
        return {"session_id": self.snapshot()["session_id"], "segment": seg.index, "calls": len(self._calls),
                "laps": seg.laps, "wallet_phase": seg.phase, "bill_cycle_usd": seg.bill_cycle,
                "reminder": self.last_reminder}
