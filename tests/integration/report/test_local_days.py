"""Issue 26, local days: the report, the Overview and every per-day figure cut days in the user's time zone
(`--timezone`, the `[report] timezone` setting, else the machine's); the JSON names the zone."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zoneinfo
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from service.config import DEFAULTS, ConfigError, merge
from service.engine_setup.engines import load_prices
from service.days import DayOf, UnknownZone, Zone
from service.report.scan import SizeMemo, TranscriptFile, scan_bytes
from service.report.summary import build_summary
from tests.support import transcripts as T
from tests.support.corpus import ROOT
from tests.support.harness import service_env

ZONES = sorted(z for z in available_timezones() if "/" in z and not z.startswith(("posix/", "right/")))
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def entries_at(instants: list[datetime]) -> list[dict]:
    """A session with one call (different sizes, so each has its own price) at each instant."""
    out = []
    for i, at in enumerate(instants):
        e = T.call(f"m{i}", 0, inn=3 + i, cw5=1000 + 37 * i, cr=5000 + 11 * i, out=20 + i)
        e["timestamp"] = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        out.append(e)
    return out


def summary_of(entries: list[dict], zone: str, since: str | None = None, until: str | None = None) -> dict:
    tf = TranscriptFile(path="/p/-home-user-proj/s.jsonl", project="-home-user-proj", subagent=False,
                        session_hint=T.SID)
    result = scan_bytes(T.to_bytes(entries), tf, SizeMemo(), len)
    return build_summary({tf.path: result}, load_prices().lookup, since=since, until=until, zone=Zone.named(zone))


def tzif_is_utc(name: str) -> bool | None:
    """Whether the zone's compiled rules (its TZif file) hold one offset, zero, with no daylight saving,
    in every local-time type and in the rule for the years past its table. None: no file to read."""
    for root in zoneinfo.TZPATH:
        path = Path(root) / name
        if path.is_file():
            data = path.read_bytes()
            break
    else:
        return None
    assert data[:4] == b"TZif"
    counts = struct.unpack(">6l", data[20:44])  # isut, isstd, leap, time, type, char
    if data[4] >= ord("2"):  # skip the 32-bit table to the 64-bit one, then read its header
        isut, isstd, leap, times, types, chars = counts
        data = data[44 + times * 5 + types * 6 + chars + leap * 8 + isstd + isut:]
        counts = struct.unpack(">6l", data[20:44])
        isut, isstd, leap, times, types, chars = counts
        at = 44 + times * 9
        footer = data[at + types * 6 + chars + leap * 12 + isstd + isut:].strip(b"\n")
    else:
        _, _, _, times, types, _ = counts
        at, footer = 44 + times * 5, b""
    kinds = [struct.unpack(">lBB", data[at + 6 * i: at + 6 * i + 6]) for i in range(types)]
    footer_utc = footer == b"" or (footer.lstrip(b"<").split(b">")[-1].lstrip(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
                                   in (b"0", b"+0", b"-0", b"0:00") and b"," not in footer)
    return all(offset == 0 and not dst for offset, dst, _ in kinds) and footer_utc


def test_a_zone_is_called_utc_exactly_when_its_rules_are_utc_at_every_instant():
    """Every zone this machine knows: "UTC" when its compiled rules hold nothing but UTC (Etc/GMT0,
    Etc/GMT-0, Zulu...), its own name otherwise (Iceland keeps UTC today but had other offsets);
    and each zone's days are the dates its clock shows, across its changes of 2026."""
    probes = [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=h, minutes=7) for h in range(0, 366 * 24, 53)]
    checked = 0
    for name in sorted(available_timezones()):
        expected = tzif_is_utc(name)
        if expected is None:
            continue
        zone = Zone.named(name)
        assert zone.name == ("UTC" if expected else name), name
        days = DayOf(zone)
        tz = ZoneInfo(name)
        for at in probes:
            stamp = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            assert days(stamp) == at.astimezone(tz).date().isoformat(), (name, stamp)
        checked += 1
    assert checked > 300, "this machine's zone files were not found (zoneinfo.TZPATH)"
    for name in ("Etc/GMT0", "Etc/GMT+0", "Etc/GMT-0", "Etc/UTC", "GMT", "Zulu"):  # the spellings that failed
        assert Zone.named(name).name == "UTC", name
    for name in ("Atlantic/Reykjavik", "Africa/Abidjan", "Europe/London", "Etc/GMT+1"):
        assert Zone.named(name).name == name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zone=st.sampled_from(ZONES),
       minutes=st.lists(st.integers(min_value=0, max_value=366 * 24 * 60), min_size=1, max_size=12))
@example(zone="Etc/GMT0", minutes=[0])  # a name of UTC: the report says "UTC", the days are UTC's
@example(zone="Etc/GMT-0", minutes=[0])
@example(zone="Europe/Berlin", minutes=[0])
def test_every_call_lands_on_its_local_date_and_the_days_sum_to_the_total(zone, minutes):
    instants = [EPOCH + timedelta(minutes=m, seconds=7) for m in minutes]
    doc = summary_of(entries_at(instants), zone)
    spend = doc["spend"]
    # the zone is named as it was given, or "UTC" where it is one of UTC's names
    assert doc["period"]["timezone"] == Zone.named(zone).name
    assert doc["period"]["timezone"] in (zone, "UTC")
    expected_days = {at.astimezone(ZoneInfo(zone)).date().isoformat() for at in instants}
    assert set(spend["by_day"]) == expected_days  # each call on the date its zone's clock showed
    assert sum(spend["by_day"].values()) == pytest.approx(spend["total_usd"], abs=1e-8)
    assert sum(spend["billed"]["by_day"].values()) == pytest.approx(spend["billed_usd"], abs=1e-8)
    # and a one-day period in that zone holds exactly that day's calls
    day = min(expected_days)
    one = summary_of(entries_at(instants), zone, since=day, until=day)["spend"]
    assert one["calls"] == sum(1 for at in instants if at.astimezone(ZoneInfo(zone)).date().isoformat() == day)
    assert one["total_usd"] == pytest.approx(spend["by_day"][day], abs=1e-8)


def test_an_evening_in_california_and_a_morning_in_tokyo_stay_on_their_own_day():
    evening = datetime(2026, 11, 3, 4, 30, tzinfo=UTC)   # 20:30 on Nov 2 in Los Angeles (PST)
    morning = datetime(2026, 11, 2, 23, 30, tzinfo=UTC)  # 08:30 on Nov 3 in Tokyo
    assert list(summary_of(entries_at([evening]), "America/Los_Angeles")["spend"]["by_day"]) == ["2026-11-02"]
    assert list(summary_of(entries_at([evening]), "UTC")["spend"]["by_day"]) == ["2026-11-03"]
    assert list(summary_of(entries_at([morning]), "Asia/Tokyo")["spend"]["by_day"]) == ["2026-11-03"]
    assert list(summary_of(entries_at([morning]), "UTC")["spend"]["by_day"]) == ["2026-11-02"]


def test_days_across_a_daylight_saving_change_are_23_and_25_hours_long():
    berlin = DayOf(Zone.named("Europe/Berlin"))
    assert berlin("2026-03-28T22:59:00.000Z") == "2026-03-28"  # 23:59 CET
    assert berlin("2026-03-28T23:00:00.000Z") == "2026-03-29"  # midnight CET
    assert berlin("2026-03-29T21:59:00.000Z") == "2026-03-29"  # 23:59 CEST: that day had 23 hours
    assert berlin("2026-03-29T22:00:00.000Z") == "2026-03-30"
    kathmandu = DayOf(Zone.named("Asia/Kathmandu"))  # +05:45: a day boundary inside an hour
    assert kathmandu("2026-05-01T18:14:59Z") == "2026-05-01"
    assert kathmandu("2026-05-01T18:15:00Z") == "2026-05-02"
    assert kathmandu("not a time") is None and kathmandu(None) is None


def test_unknown_zones_are_clear_errors():
    for bad in ("Mars/Olympus", "../etc/passwd", "Europe/", "x" * 100):
        with pytest.raises(UnknownZone, match="unknown time zone"):
            Zone.named(bad)
    with pytest.raises(ConfigError, match="report.timezone: unknown time zone"):
        merge(DEFAULTS, {"report": {"timezone": "Nowhere/Land"}})
    assert merge(DEFAULTS, {"report": {"timezone": "Asia/Tokyo"}})["report"]["timezone"] == "Asia/Tokyo"
    assert Zone.named("").name == "UTC"  # the machine's zone: the suite runs with TZ=UTC (conftest)


def run_report(projects: Path, home: Path, *args: str, config: str | None = None) -> subprocess.CompletedProcess:
    if config is not None:  # CTXLAMP_HOME holds config.toml
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(config)
    env = dict(os.environ, CTXLAMP_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "service.cli", "report", "--no-service", "--no-cache",
                           "--projects", str(projects), *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)


def write_session(projects: Path, entries: list[dict]) -> None:
    folder = projects / "-home-user-proj"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{T.SID}.jsonl").write_bytes(T.to_bytes(entries))


def test_the_command_cuts_days_in_the_zone_asked_for_and_says_which(tmp_path):
    evening = datetime(2026, 11, 3, 4, 30, tzinfo=UTC)  # Nov 2 in California
    write_session(tmp_path / "p", [T.prompt("go", 0), *entries_at([evening])])
    out = run_report(tmp_path / "p", tmp_path / "h1", "--json", "--timezone", "America/Los_Angeles")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["period"]["timezone"] == "America/Los_Angeles" and list(doc["spend"]["by_day"]) == ["2026-11-02"]
    inside = run_report(tmp_path / "p", tmp_path / "h2", "--json", "--timezone", "America/Los_Angeles",
                        "--since", "2026-11-02", "--until", "2026-11-02")
    assert json.loads(inside.stdout)["spend"]["calls"] == 1
    outside = run_report(tmp_path / "p", tmp_path / "h3", "--json", "--since", "2026-11-02", "--until", "2026-11-02")
    assert json.loads(outside.stdout)["spend"]["calls"] == 0  # in UTC (the machine's zone here) it is Nov 3
    text = run_report(tmp_path / "p", tmp_path / "h4", "--timezone", "Asia/Tokyo").stdout
    assert text.splitlines()[0].endswith("(days in Asia/Tokyo)")
    # the setting, when no option is given
    configured = run_report(tmp_path / "p", tmp_path / "h5", "--json", config='[report]\ntimezone = "Asia/Tokyo"\n')
    assert json.loads(configured.stdout)["period"]["timezone"] == "Asia/Tokyo"


def test_an_unknown_zone_is_refused_with_a_clear_message(tmp_path):
    write_session(tmp_path / "p", [T.prompt("go", 0), T.call("m1", 10)])
    out = run_report(tmp_path / "p", tmp_path / "h", "--timezone", "Mars/Olympus")
    assert out.returncode == 2 and out.stdout == ""
    assert "unknown time zone 'Mars/Olympus' (use an IANA name" in out.stderr


def test_the_service_answers_in_the_zone_asked_for_and_refuses_an_unknown_one(tmp_path):
    """A real `ctxlamp serve`: ?timezone= on the report and the overview; `ctxlamp report --timezone` with a
    service running gives that zone's days."""
    from service.client.api import ApiClient
    from tests.support.servicectl import running_service

    home, claude = tmp_path / "ctx", tmp_path / "claude"
    evening = datetime(2026, 11, 3, 4, 30, tzinfo=UTC)  # Nov 2 in California, Nov 3 in UTC
    write_session(claude / "projects", [T.prompt("go", 0), *entries_at([evening])])
    home.mkdir()
    env = service_env(home, claude)
    with running_service(env, home) as (_proc, info):
        client = ApiClient(info, timeout=30)
        status, doc = client.exchange("GET", "/api/v1/report?timezone=America/Los_Angeles")
        assert status == 200 and doc["period"]["timezone"] == "America/Los_Angeles"
        assert list(doc["spend"]["by_day"]) == ["2026-11-02"]
        status, doc = client.exchange("GET", "/api/v1/report")
        assert doc["period"]["timezone"] == "UTC" and list(doc["spend"]["by_day"]) == ["2026-11-03"]
        status, body = client.exchange("GET", "/api/v1/report?timezone=Mars/Olympus")
        assert status == 400 and "unknown time zone" in json.dumps(body)
        status, ov = client.exchange("GET", "/api/v1/overview?days=1&timezone=Asia/Tokyo")
        assert status == 200 and ov["period"]["timezone"] == "Asia/Tokyo"
        out = subprocess.run([sys.executable, "-m", "service.cli", "report", "--json", "--timezone",
                              "America/Los_Angeles"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
                             check=True)
        assert list(json.loads(out.stdout)["spend"]["by_day"]) == ["2026-11-02"]
