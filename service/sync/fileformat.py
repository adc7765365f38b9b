"""A device file: what one device writes to the shared folder, versioned, every figure in a range.

The file holds figures only: per session (a hash of its id, never the id) and per UTC day, model and
project label, the calls, tokens and USD (spend, billed), the rent, restart savings and schedules of the
stretches of work that ended that day, Claude Code's compactions, and the savings channels; per day, the
channels of the ledgers that belong to no session. Never prompt text, file contents, paths or session ids.
Version 1 (before schedules and compactions) is still read: its rows count, with no schedule or
compaction (`DeviceFile.version` says which a device wrote).

Another device's file is outside input: `decode` refuses the whole file (BadFile, with the reason)
when anything in it is not where it must be, so a torn file, a future version or an absurd figure
changes nothing and is named.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone

from service.engine.compactions import TRIGGERS
from service.team.bounds import MONEY_MAX, day as bounded_day
from service.team.figures import CHANNEL_FIELDS, UNKNOWN_DAY, shared_name

FORMAT = "ctxlamp-sync-device"
VERSION = 2
READS = (1, 2)                 # a device still on an older ctxlamp keeps counting
MAX_BYTES = 64 << 20           # a device file larger than this is refused unread
MAX_SESSIONS = 1_000_000
MAX_ROWS = 100_000             # rows of one session, or of the device's own days
COUNT_MAX = 2 ** 53            # calls and tokens: exact in a float, far above any real day
TEXT_MAX = 200                 # model names and project labels (as the team keeps them)

SPEND_COLUMNS = ("day", "model", "project", "calls", "main_calls", "unpriced_calls", "input_tokens",
                 "output_tokens", "cache_write_tokens", "cache_read_tokens", "main_usd", "subagents_usd",
                 "estimated_usd", "unwritten_usd")
SPEND = {c: i for i, c in enumerate(SPEND_COLUMNS)}  # column -> its place in a spend row
RESTART_V1 = ("day", "rent_usd", "first_reminder_usd", "compact_first_reminder_usd", "best_single_usd",
              "missed_usd", "segments", "segments_with_reminders", "missed_segments", "reminders")
# the schedules (restart_savings.schedule): segments with one, then its sums
SCHEDULE_COLUMNS = ("schedule_segments", "schedule_best_usd", "schedule_best_restarts_only_usd",
                    "schedule_followed_usd", "restarts_followed", "restarts_best", "compactions_followed",
                    "compactions_best")
RESTART_COLUMNS = RESTART_V1 + SCHEDULE_COLUMNS
# Claude Code's compactions by who started them, each trigger's estimated range (the report's `compactions`)
COMPACTION_COLUMNS = ("day", *TRIGGERS, "unpriced",
                      *(f"{by}_{end}_usd" for by in TRIGGERS for end in ("low", "high")))
# column -> (report block, field): the team's channel figures and the few more the report prints
CHANNELS = {**CHANNEL_FIELDS,
            "edit_str_replace_ops": ("edit", "str_replace_ops"),
            "edit_str_replace_not_found": ("edit", "str_replace_misses.not_found"),
            "edit_str_replace_ambiguous": ("edit", "str_replace_misses.ambiguous"),
            "edit_str_replace_other_errors": ("edit", "str_replace_other_errors"),
            "edit_anchored_ops": ("edit", "anchored_ops"),
            "edit_anchored_conflicts": ("edit", "anchored_conflicts")}
CHANNEL_COLUMNS = ("day", *CHANNELS)
# a restart's savings may be negative (a restart that would have cost more); every other USD figure is not
SIGNED = frozenset({"first_reminder_usd", "compact_first_reminder_usd", "best_single_usd", "schedule_followed_usd"})


class BadFile(ValueError):
    """A device file that cannot be taken as it is: the message says why."""


def session_key(session_id: str) -> str:
    """What the folder holds of a session id: a hash, the same on every device (the id is random, 122 bits)."""
    return hashlib.sha256(f"ctxlamp-sync:{session_id}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def day_of_row(day: str | None) -> str:
    """A day as a device file keeps it: a readable UTC day, else the unknown day (1970-01-01)."""
    return bounded_day(day) or UNKNOWN_DAY


@dataclass
class SessionFigures:
    last_call: str = ""
    spend: list[list] = field(default_factory=list)
    restart: list[list] = field(default_factory=list)
    channels: list[list] = field(default_factory=list)
    compactions: list[list] = field(default_factory=list)


@dataclass
class DeviceFile:
    id: str
    name: str
    written_at: str
    projects: str
    sessions: dict[str, SessionFigures]
    channels: list[list] = field(default_factory=list)  # per day, of no session (ledgers, a router)
    version: int = VERSION  # the format the device wrote: 1 has no schedules or compactions

    def doc(self) -> dict:
        """The file as this version writes it."""
        return {"format": FORMAT, "version": VERSION, "device": {"id": self.id, "name": self.name},
                "written_at": self.written_at, "projects": self.projects, "columns": columns(VERSION),
                "sessions": {k: {"last_call": s.last_call, "spend": s.spend, "restart": s.restart,
                                 "channels": s.channels, "compactions": s.compactions}
                             for k, s in sorted(self.sessions.items())},
                "channels": self.channels}


def columns(version: int) -> dict[str, list[str]]:
    """The columns of each table in a file of `version`."""
    if version == 1:
        return {"spend": list(SPEND_COLUMNS), "restart": list(RESTART_V1), "channels": list(CHANNEL_COLUMNS)}
    return {"spend": list(SPEND_COLUMNS), "restart": list(RESTART_COLUMNS), "channels": list(CHANNEL_COLUMNS),
            "compactions": list(COMPACTION_COLUMNS)}


def encode(device: DeviceFile) -> bytes:
    import orjson

    return orjson.dumps(device.doc(), option=orjson.OPT_SORT_KEYS)


def decode(data: bytes) -> DeviceFile:
    """The device file in `data`, every field checked (BadFile names the first that is wrong)."""
    import orjson

    from service.sync.settings import clean_name, is_device_id

    if len(data) > MAX_BYTES:
        raise BadFile(f"larger than {MAX_BYTES >> 20} MB")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise BadFile("not whole JSON (torn, or half-way through a sync)") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadFile("not a ctxlamp device file")
    version = doc.get("version")
    if isinstance(version, bool) or version not in READS:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        raise BadFile(f"format version {str(version)[:20]}; this ctxlamp reads versions 1 to {VERSION}"
                      + (" (the file is from a newer ctxlamp: update this one)" if newer else ""))
    dev = doc.get("device")
    if not isinstance(dev, dict) or not is_device_id(dev.get("id")):
        raise BadFile("no device id")
    name = clean_name(dev.get("name")) or dev["id"][:8]
    written = _instant(doc.get("written_at"), "written_at")
    if doc.get("columns") != columns(version):
        raise BadFile("columns differ from this version's")
    restart_columns = RESTART_COLUMNS if version == VERSION else RESTART_V1
    sessions = doc.get("sessions")
    if not isinstance(sessions, dict) or len(sessions) > MAX_SESSIONS:
        raise BadFile("sessions is not a table of at most a million")
    out: dict[str, SessionFigures] = {}
    for key, s in sessions.items():
        if not is_device_id(key) or not isinstance(s, dict):
            raise BadFile("a session key that is not a hash")
        last = s.get("last_call")
        if not isinstance(last, str) or len(last) > 40:
            raise BadFile("a session's last_call is not a time")
        restart = _rows(s.get("restart"), restart_columns)
        compactions = _rows(s.get("compactions"), COMPACTION_COLUMNS) if version == VERSION else []
        out[key] = SessionFigures(last, _rows(s.get("spend"), SPEND_COLUMNS), [_upgraded(r) for r in restart],
                                  _rows(s.get("channels"), CHANNEL_COLUMNS), compactions)
    projects = doc.get("projects")
    return DeviceFile(dev["id"], name, written, projects if isinstance(projects, str) else "",
                      out, _rows(doc.get("channels"), CHANNEL_COLUMNS), version)


def _upgraded(row: list) -> list:
    """A restart row as this version keeps it: a version 1 row has no schedule (0 segments with one)."""
    return row + [0] * (len(RESTART_COLUMNS) - len(row))


def _instant(text: object, what: str) -> str:
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise BadFile(f"{what} is not a time") from None
    if when.tzinfo is None:
        raise BadFile(f"{what} has no time zone")
    return when.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _rows(rows: object, columns: tuple[str, ...]) -> list[list]:
    if not isinstance(rows, list) or len(rows) > MAX_ROWS:
        raise BadFile("rows are not a list of at most 100,000")
    for row in rows:
        if not isinstance(row, list) or len(row) != len(columns):
            raise BadFile("a row of the wrong width")
        for column, value in zip(columns, row):
            if not _fits(column, value):
                raise BadFile(f"{column} out of range: {str(value)[:40]!r}")
    return rows


def _fits(column: str, value: object) -> bool:
    """Whether one figure of another device's file may be read: its type and its range."""
    if column == "day":
        return isinstance(value, str) and bounded_day(value) == value
    if column in ("model", "project"):
        return isinstance(value, str) and len(value) <= TEXT_MAX and shared_name(value) == value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if column.endswith("_usd"):
        low = -MONEY_MAX if column in SIGNED else 0.0
        return math.isfinite(value) and low <= value <= MONEY_MAX
    return isinstance(value, int) and 0 <= value <= COUNT_MAX
