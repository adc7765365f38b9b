"""The calendar: calendar days in the user's time zone, and which day a call's time falls on.

A zone is resolved once, where a name enters (the command line, the API, the settings), into a
`Zone`, and that value is passed down: nothing below an edge looks a name up again.

A transcript's times are UTC instants (`...Z`); a user reads "today" on their own
clock, so the report, the Overview and their per-day figures cut days in one zone:
the one named by `--timezone`, else the `[report] timezone` setting, else the
machine's. The team server keeps UTC days (its members live in different zones).

Which zone the machine is in is the one platform difference here (`machine_zone`):
the `TZ` variable or the `/etc/localtime` link name an IANA zone on Linux and macOS;
elsewhere the C library's local time converts (its DST rules, no name).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

UTC_NAME = "UTC"
LOCAL_NAME = "local"  # the machine's zone when it has no IANA name
# Where a zone is asked whether it is UTC: its local mean time before standard time (every place
# had one, never exactly zero), then mid-winter and mid-summer of each year its rules cover.
_UTC_PROBES = (datetime(1800, 1, 1, tzinfo=UTC),
               *(datetime(year, month, 1, tzinfo=UTC) for year in range(1850, 2101) for month in (1, 7)))


class UnknownZone(ValueError):
    """A time-zone name that is not an IANA zone this machine knows."""


def _iana(name: str) -> ZoneInfo:
    """The zone, or UnknownZone saying what a valid name looks like."""
    text = name.strip()
    if not text or len(text) > 64 or text.startswith(("/", ".")) or ".." in text:
        raise UnknownZone(f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin or UTC)")
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownZone(f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin or UTC)") from None


def check_zone(name: str) -> str:
    """The name when it is empty (the machine's zone) or a known IANA zone; UnknownZone otherwise."""
    if name.strip():
        _iana(name)
    return name.strip()


def machine_zone() -> tuple[str, tzinfo | None]:
    """(IANA name, zone) of this machine, or ("local", None) when it has no name we can read
    (then the C library's local time converts)."""
    tz = os.environ.get("TZ", "").strip().lstrip(":")
    if tz:
        try:
            return tz, _iana(tz)
        except UnknownZone:
            pass
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        target = ""
    marker = "/zoneinfo/"
    if marker in target:
        name = target.split(marker, 1)[1]
        try:
            return name, _iana(name)
        except UnknownZone:
            pass
    return LOCAL_NAME, None


@dataclass(frozen=True)
class Zone:
    """A time zone days are cut in: the name a report shows, and the zone (None: the C library's
    local time, for a machine whose zone has no IANA name)."""

    name: str
    tz: tzinfo | None

    @classmethod
    def named(cls, name: str | None) -> "Zone":
        """The zone a setting or option names: empty, None or "local" is the machine's; UnknownZone
        when the name is not an IANA zone this machine knows. Every name for UTC all year is "UTC"."""
        if name is None or not name.strip() or name.strip() == LOCAL_NAME:
            found, tz = machine_zone()
        else:
            found, tz = name.strip(), _iana(name)
        if tz is not None and is_utc_always(found):  # one word for UTC, whatever /etc/localtime calls it
            return ZONE_UTC
        return cls(found, tz)


ZONE_UTC = Zone(UTC_NAME, ZoneInfo(UTC_NAME))  # the team server's days, and the engine's replays


@lru_cache(maxsize=64)
def is_utc_always(name: str) -> bool:
    """Whether the IANA zone `name` is UTC at every instant its rules cover: offset zero and no
    daylight saving (Etc/UTC, GMT, Zulu, Etc/GMT-0...). Decided from the zone's own rules, not a
    list of names, so every spelling of UTC is one zone; a place that keeps UTC today (Iceland,
    Abidjan) had other offsets once and keeps its own name."""
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    zero = timedelta(0)
    return all(zone.utcoffset(at) == zero and zone.dst(at) == zero
               for at in (probe.astimezone(zone) for probe in _UTC_PROBES))


class DayOf:
    """ts -> "YYYY-MM-DD" in one zone (None for a missing or unreadable time).

    Memoised by the minute of the UTC time: zone offsets and their changes fall on whole minutes,
    so every call of one minute lands on the same day, and a long history converts each minute once.
    """

    def __init__(self, zone: Zone = ZONE_UTC):
        self.name, self.tz = zone.name, zone.tz
        self._utc = self.name == UTC_NAME  # a UTC time's date is its first ten characters
        self._memo: dict[str, str | None] = {}

    def __call__(self, ts: object) -> str | None:
        if not isinstance(ts, str) or len(ts) < 10:
            return None
        if self._utc and ts.endswith("Z"):
            return ts[:10]
        key = ts[:16] if ts.endswith("Z") and len(ts) >= 17 else ts
        hit = self._memo.get(key, "")
        if hit != "":
            return hit
        day = self._convert(ts)
        if len(self._memo) < 1_000_000:
            self._memo[key] = day
        return day

    def _convert(self, ts: str) -> str | None:
        from service.channels.ledgers import iso_ts

        iso = iso_ts(ts)
        if iso is None:
            return None
        try:
            instant = datetime.fromisoformat(iso)
        except ValueError:
            return None
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=UTC)
        return local_date(instant, self.tz).isoformat()

    def today(self, now: datetime | None = None) -> date:
        """The date on this zone's clock now (or at `now`)."""
        return local_date(now or datetime.now(UTC), self.tz)


def local_date(instant: datetime, zone: tzinfo | None) -> date:
    """The calendar date of an aware instant in `zone` (None: the C library's local time)."""
    if zone is not None:
        return instant.astimezone(zone).date()
    t = time.localtime(instant.timestamp())
    return date(t.tm_year, t.tm_mon, t.tm_mday)


def day_bounds_utc(day: str, zone: tzinfo | None) -> tuple[datetime, datetime]:
    """The UTC instants where a local day starts and the next one starts (23 to 25 hours apart)."""
    d = date.fromisoformat(day)
    start = _local_midnight(d, zone)
    end = _local_midnight(d + timedelta(days=1), zone)
    return start, end


def _local_midnight(d: date, zone: tzinfo | None) -> datetime:
    if zone is not None:
        return datetime(d.year, d.month, d.day, tzinfo=zone).astimezone(UTC)
    return datetime.fromtimestamp(time.mktime((d.year, d.month, d.day, 0, 0, 0, 0, 0, -1)), UTC)
