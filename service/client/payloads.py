"""The API's answers as types, defined once: what `SessionEngine.snapshot()` returns, the API publishes
and the desktop reads. Pure type definitions (the engine builds its snapshot to them, the OpenAPI
document is made from them), so the engine may import this module and nothing else outside itself.

The field names are the API's (docs/measurement.md section 10, docs/api.md) and
stay as they are; their glossary is in docs/measurement.md ("The snapshot's
names"). The OpenAPI schema (service/api/openapi.py) is made from these types.
"""
from __future__ import annotations

from typing import Literal, TypedDict

LampState = Literal["no_transcript", "insufficient_data", "warming", "good", "warning", "critical"]
LampColour = Literal["white", "green", "amber", "red"]
Move = Literal["continue", "compact", "restart"]


class Lamp(TypedDict, total=False):
    """The lamp: its state, colour and (while white) why (section 8). `state` and `colour` are always there."""

    state: LampState
    colour: LampColour
    reason: str
    held: bool  # published: the colour of a notice younger than a minute, not the engine's lamp now


class Skeleton(TypedDict):
    """The chart's landmarks on the u axis, and A(u*N*)/A* sampled (section 7); `curve` is None when not asked for."""

    u_mirror: float
    u_amber: float
    u_crit: float
    curve: list[list[float]] | None


class LastReminder(TypedDict):
    """The latest reminder raised in the session (section 9)."""

    lap: int
    call: int
    at: str | None


class SegmentSpend(TypedDict):
    """What the open segment's calls billed, prompt and output (USD)."""

    bill_in_usd: float
    bill_out_usd: float


class Window(TypedDict):
    """The prompt against the model's context window."""

    tokens: int
    limit: int
    pct: float | None


class Cache(TypedDict):
    """The prompt cache: its lifetime, when it runs out, what rewriting the whole prompt costs once it is cold
    and what a fresh session writing only the useful part costs (USD, at the cache's write price); on a
    1-hour cache with a long prompt, when Claude Code would compact it idle and what that costs; and the
    three moves priced once it is cold (the next call writes what it carries) and the cache notice's move."""

    ttl_s: int
    expires_at: str | None
    cold_rewrite_usd: float
    cold_rewrite_tokens: int
    fresh_start_usd: float
    fresh_start_tokens: int
    idle_compact_at: str | None
    idle_compact_usd: float | None
    cold_advice: Advice | None
    break_move: Move | None  # the move the cache notice names ("continue": none); service/engine/schedule.py


class Compactions(TypedDict):
    """A session's compactions by who started them: the user, Claude Code near the window's end, or idle."""

    manual: int
    auto: int
    idle: int


class Schedule(TypedDict):
    """A segment's schedules of moves (docs/measurement.md section 14): the best in hindsight, of both moves
    and of restarts alone, and what following every notice saved (signed); USD, estimates."""

    best_usd: float
    best_restarts_only_usd: float
    followed_usd: float
    restarts_best: int
    compactions_best: int
    restarts_followed: int
    compactions_followed: int


class RestartSavings(TypedDict):
    """What one restart of the open segment would have saved (docs/measurement.md section 14): at its first
    reminder, and the best single restart in hindsight, with their calls; estimates."""

    first_reminder_call: int | None
    first_reminder_usd: float
    best_call: int | None
    best_usd: float
    calls_after_reminder: int | None
    compact_first_reminder_usd: float
    compaction_keep: float | None
    schedule: Schedule | None
    calls: int | None  # the calls counted, and those that missed the cache (the advice's miss share)
    missed_calls: int | None


class Advice(TypedDict):
    """The moves priced over the next `horizon_calls` calls (USD, estimates): the cheapest is `move`,
    `saves_usd` what it saves against going on."""

    move: Move
    horizon_calls: float
    continue_usd: float
    compact_usd: float
    restart_usd: float
    saves_usd: float
    label: str
    pays_twice: bool  # the move saves its own price again over the horizon: the lamp's words name it only then


class Snapshot(TypedDict):
    """One session's status after a batch of entries (docs/measurement.md section 10)."""

    session_id: str
    transcript: str
    project: str | None
    segment: int
    calls: int
    turns: int
    model: str | None
    price_source: str | None
    totalStock: int
    L: int
    L_peak: int
    B: int
    B_default: int
    floor: int | None
    D: int
    g: float
    cRatio: float
    x: float
    xSweet: float | None
    u: float | None
    dhat: float | None
    mf: float | None
    pp: float | None
    bp: float
    br: float | None
    bill_cycle_usd: float
    wallet_phase: float
    laps: int
    lamp: Lamp
    skeleton: Skeleton | None
    reminder: LastReminder | None
    rewinds: int
    restart_savings: RestartSavings
    advice: Advice | None
    spend: SegmentSpend
    window: Window
    cache: Cache
    compactions: Compactions
    skipped_lines: int
    started_at: str | None  # the session's first call: a session is named by its folder and when it started
    updated_at: str | None
