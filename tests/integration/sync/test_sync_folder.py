"""Two machines, one synced folder, as a new user sets it up: each device its own CTXLAMP_HOME and
CLAUDE_CONFIG_DIR with different transcripts and one session in common, `ctxlamp sync --folder` on
both, then `ctxlamp report --json` on each. The expected figures are a single report over every
transcript at once (one data folder holding all of them, sync off), not the sync code's own sums.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.support.corpus import ROOT, copy_fixtures

CTXLAMP = ROOT / ".venv" / "bin" / "ctxlamp"
COMMON = "b6776253-f37c-4eb5-ad4d-74e2851adb30"  # the session both machines hold (a synced ~/.claude)
ONLY_A = ("94d43126-6140-498c-a6f6-39f68241e74d", "99b248ac-b473-47e0-87ce-40f649600bd8")
ONLY_B = ("bbca98b8-62c3-4e7d-88bc-8397f9430d90", "c76116bc-c53e-4b2d-9ded-41b901c5448d",
          "e48519d4-da38-4beb-b310-e8a354dd20b4")
MONEY = 1e-8  # the rent and restart sums are rounded to 9 decimals per stretch of work before they are added
MICRO = 1e-5  # compactions are priced to the micro-dollar (the report's estimate), per session and day in a file


def ctxlamp(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(CTXLAMP), *args], env=env, capture_output=True, text=True, timeout=300, check=check)


def machine(base: Path, name: str, every: Path, sessions: tuple[str, ...]) -> dict:
    """A data folder pair for one machine holding these sessions (main file and subagents' folder)."""
    src = next((every / "projects").iterdir())
    dest = base / name / "claude" / "projects" / src.name
    dest.mkdir(parents=True)
    for sid in sessions:
        shutil.copy(src / f"{sid}.jsonl", dest)
        if (src / sid).is_dir():
            shutil.copytree(src / sid, dest / sid)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
    for k in ("LEAN_CTX_DATA_DIR",):
        env.pop(k, None)
    env.update(CTXLAMP_HOME=str(base / name / "home"), CLAUDE_CONFIG_DIR=str(base / name / "claude"),
               HOME=str(base / name / "user"))
    return env


def figures(report: dict) -> dict:
    """What must sum across devices, from a report --json."""
    sp, rs = report["spend"], report["restart_savings"]
    return {
        "spend": (sp["total_usd"], sp["main_usd"], sp["subagents_usd"], sp["billed"]["usd"],
                  sp["billed"]["unwritten_measured_usd"]),
        "calls": sp["calls"], "by_day": sp["billed"]["by_day"], "by_model": sp["by_model"],
        "tokens": {d: {k: v for k, v in row.items() if k.endswith("_tokens")} for d, row in sp["days"].items()},
        "models": {d: row["models"] for d, row in sp["days"].items()},
        "restart": (rs["rent_usd"], rs["first_reminder_usd"], rs["best_single_usd"], rs["missed_usd"],
                    rs["schedule"]["best_usd"], rs["schedule"]["best_restarts_only_usd"],
                    rs["schedule"]["followed_usd"]),
        "stretches": (rs["segments"], rs["segments_with_reminders"], rs["reminders"]),
        "schedule": {k: rs["schedule"][k] for k in ("segments", "restarts_followed", "restarts_best",
                                                    "compactions_followed", "compactions_best")},
        "compactions": (report["compactions"]["by_trigger"], report["compactions"]["count"],
                        report["compactions"]["unpriced"]),
        "compaction_usd": (report["compactions"]["cost_usd"], *report["compactions"]["cost_range_usd"].values()),
        "channels": (report["edit"]["str_replace_calls"], report["edit"]["str_replace_misses"],
                     report["edit"]["str_replace_old_string_usd"], report["pinch"]["events"],
                     report["pinch"]["requests"], report["pinch"]["saved_usd"], report["pinch"]["share_pinched"],
                     report["retrieval"]["calls"], report["retrieval"]["bytes_saved"]),
    }


def assert_same(got: dict, want: dict) -> None:
    for key in want:
        g, w = got[key], want[key]
        if key in ("spend", "restart"):
            assert g == pytest.approx(w, abs=MONEY), key
        elif key == "compaction_usd":
            assert g == pytest.approx(w, abs=MICRO), key
        elif key in ("by_day", "by_model"):
            assert g.keys() == w.keys() and all(g[k] == pytest.approx(w[k], abs=MONEY) for k in w), key
        elif key == "channels":
            assert [x if not isinstance(x, float) else pytest.approx(x, abs=MONEY) for x in g] == list(w), key
        else:
            assert g == w, key


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    if not CTXLAMP.exists():
        pytest.skip("ctxlamp is not installed in .venv (make .venv/.installed)")
    base = tmp_path_factory.mktemp("sync")
    every = copy_fixtures(base / "every")
    single = {k: v for k, v in os.environ.items() if not k.startswith(("CTXLAMP_", "CLAUDE_"))}
    single.update(CTXLAMP_HOME=str(base / "single-home"), CLAUDE_CONFIG_DIR=str(every), HOME=str(base / "su"))
    shared = base / "Dropbox" / "ctxlamp"
    shared.mkdir(parents=True)
    a = machine(base, "laptop", every, (COMMON, *ONLY_A))
    b = machine(base, "desktop", every, (COMMON, *ONLY_B))
    for env, name in ((a, "laptop"), (b, "desktop")):
        ctxlamp(env, "sync", "--name", name)
        ctxlamp(env, "sync", "--folder", str(shared))
    return {"base": base, "every": every, "single": single, "shared": shared, "a": a, "b": b,
            "want": json.loads(ctxlamp(single, "report", "--json", "--timezone", "UTC").stdout)}


def report(env: dict, *args: str) -> dict:
    return json.loads(ctxlamp(env, "report", "--json", *args).stdout)


def test_each_device_totals_every_transcript_once(world):
    want = figures(world["want"])
    for env in (world["a"], world["b"]):
        got = report(env)
        assert sorted(d["name"] for d in got["devices"]) == ["desktop", "laptop"]
        assert [d["name"] for d in got["devices"] if d["this"]] == [
            "laptop" if env is world["a"] else "desktop"]
        assert_same(figures(got), want)
        assert sum(d["total_usd"] for d in got["devices"]) == pytest.approx(world["want"]["spend"]["billed"]["usd"],
                                                                             abs=MONEY)
        assert got["sync"]["skipped"] == []


def test_the_folder_holds_no_prompt_text_paths_or_session_ids(world):
    secrets: set[str] = set()
    for path in (world["every"] / "projects").rglob("*.jsonl"):
        secrets.add(path.stem)
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry.get("cwd"):
                secrets.add(entry["cwd"])
            message = entry.get("message") or {}
            content = message.get("content") if isinstance(message, dict) else None
            parts = [content] if isinstance(content, str) else [
                p.get("text") or p.get("content") for p in content or [] if isinstance(p, dict)]
            secrets |= {p for p in parts if isinstance(p, str) and len(p) >= 12}
    assert len(secrets) > 20
    files = list(world["shared"].iterdir())
    assert len([f for f in files if f.name.startswith("ctxlamp-device-")]) == 2
    for f in files:
        text = f.read_text(encoding="utf-8")
        found = [s[:40] for s in secrets if s in text]
        assert found == [], f.name


def test_device_this_gives_the_one_machine(world, tmp_path):
    alone = {**world["a"], "CTXLAMP_HOME": str(tmp_path / "alone")}  # the same transcripts, sync never on
    want = figures(report(alone, "--timezone", "UTC"))
    got = report(world["a"], "--device", "this", "--timezone", "UTC")
    assert_same(figures(got), want)
    assert sorted(d["name"] for d in got["devices"]) == ["desktop", "laptop"]
    # one device's share of the total: the sessions counted for it. The common session is the same on both
    # (a synced ~/.claude: the same latest call, as many calls), so the smaller device id counts it.
    other = report(world["a"], "--device", "desktop")
    ids = {d["name"]: d["id"] for d in other["devices"]}
    assert [d["this"] for d in other["devices"]] == [True, False]
    sessions = ((COMMON,) if ids["desktop"] < ids["laptop"] else ()) + ONLY_B
    share = figures(report(machine(tmp_path, "share", world["every"], sessions), "--timezone", "UTC"))
    assert_same(figures(other), share)
    assert figures(other)["spend"][3] == pytest.approx(
        next(d["total_usd"] for d in other["devices"] if d["name"] == "desktop"), abs=MONEY)


def test_a_torn_file_and_conflicted_copies_change_nothing_and_are_named(world, tmp_path):
    shared = world["shared"]
    before = figures(report(world["a"]))
    desktop = next(d for d in report(world["a"])["devices"] if d["name"] == "desktop")
    whole = (shared / f"ctxlamp-device-{desktop['id']}.json").read_bytes()
    stranger = "f" * 32
    planted = {
        f"ctxlamp-device-{stranger}.json": whole[: len(whole) // 2],                   # torn mid-sync
        f"ctxlamp-device-{desktop['id']} (laptop's conflicted copy 2026-12-01).json": whole,  # Dropbox
        f"ctxlamp-device-{desktop['id']}.sync-conflict-20261201-101010-ABCDEFG.json": whole,  # Syncthing
        f"ctxlamp-device-{desktop['id']}-LAPTOP.json": whole,                          # OneDrive
    }
    for name, data in planted.items():
        (shared / name).write_bytes(data)
    try:
        got = report(world["a"])
        assert_same(figures(got), before)
        named = {row["file"]: row["reason"] for row in got["sync"]["skipped"]}
        assert set(named) == set(planted)
        assert "torn" in named[f"ctxlamp-device-{stranger}.json"]
        assert "Dropbox" in named[f"ctxlamp-device-{desktop['id']} (laptop's conflicted copy 2026-12-01).json"]
        assert "Syncthing" in named[f"ctxlamp-device-{desktop['id']}.sync-conflict-20261201-101010-ABCDEFG.json"]
        assert "OneDrive" in named[f"ctxlamp-device-{desktop['id']}-LAPTOP.json"]
        text = ctxlamp(world["a"], "report").stdout
        assert all(name in text for name in planted)
        listing = ctxlamp(world["a"], "devices").stdout
        assert "desktop" in listing and all(name in listing for name in planted)
    finally:
        for name in planted:
            (shared / name).unlink()


def test_a_sync_delay_counts_what_arrived_and_never_twice(tmp_path, world):
    """Each machine has its own copy of the folder; the sync tool copies files over late. Meanwhile the
    laptop's copy of the common session (its ~/.claude synced too) is behind the desktop's."""
    every = world["every"]
    a = machine(tmp_path, "laptop", every, (COMMON, *ONLY_A))
    b = machine(tmp_path, "desktop", every, (COMMON,))
    common_a = next(Path(a["CLAUDE_CONFIG_DIR"]).rglob(f"{COMMON}.jsonl"))
    lines = common_a.read_text(encoding="utf-8").splitlines(keepends=True)
    common_a.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")  # the rest not synced here yet
    folder_a, folder_b = tmp_path / "a-folder", tmp_path / "b-folder"
    folder_a.mkdir()
    folder_b.mkdir()
    ctxlamp(a, "sync", "--folder", str(folder_a))
    ctxlamp(b, "sync", "--folder", str(folder_b))
    early = report(a)
    assert [d["name"] for d in early["devices"]] == [early["devices"][0]["name"]]  # nothing arrived yet
    # the desktop gets the other sessions, writes again; only its first file reaches the laptop
    (first,) = [f for f in folder_b.iterdir() if f.name.startswith("ctxlamp-device-")]
    shutil.copy(first, folder_a / first.name)
    src = next((every / "projects").iterdir())
    dest = next(Path(b["CLAUDE_CONFIG_DIR"]).glob("projects/*"))
    for sid in ONLY_B:
        shutil.copy(src / f"{sid}.jsonl", dest)
        if (src / sid).is_dir():
            shutil.copytree(src / sid, dest / sid)
    ctxlamp(b, "sync", "--now")
    midway = report(a)
    partial = {**world["single"], "CTXLAMP_HOME": str(tmp_path / "partial-home"),
               "CLAUDE_CONFIG_DIR": str(tmp_path / "partial")}
    part_dest = tmp_path / "partial" / "projects" / src.name
    part_dest.mkdir(parents=True)
    for sid in (COMMON, *ONLY_A):
        shutil.copy(src / f"{sid}.jsonl", part_dest)
    # the desktop saw the common session's latest call: its whole copy counts, once
    assert_same(figures(midway), figures(report(partial, "--timezone", "UTC")))
    shutil.copy(first, folder_a / first.name)  # the second write arrives
    assert_same(figures(report(a)), figures(world["want"]))


def test_a_clock_skew_neither_hides_a_device_nor_keeps_it_fresh(world):
    shared = world["shared"]
    got = report(world["a"])
    desktop = next(d for d in got["devices"] if d["name"] == "desktop")
    path = shared / f"ctxlamp-device-{desktop['id']}.json"
    whole = path.read_bytes()
    doc = json.loads(whole)
    try:
        now = datetime.now(timezone.utc)
        doc["written_at"] = (now + timedelta(hours=5)).isoformat()  # the desktop's clock runs 5 hours ahead
        path.write_text(json.dumps(doc), encoding="utf-8")
        ahead = report(world["a"])
        seen = next(d for d in ahead["devices"] if d["name"] == "desktop")
        assert datetime.fromisoformat(seen["last_seen"].replace("Z", "+00:00")) <= datetime.now(timezone.utc)
        assert not seen["stale"]
        assert_same(figures(ahead), figures(world["want"]))
        doc["written_at"] = (now - timedelta(days=30)).isoformat()  # behind, or not seen for a month
        path.write_text(json.dumps(doc), encoding="utf-8")
        behind = report(world["a"])
        seen = next(d for d in behind["devices"] if d["name"] == "desktop")
        assert seen["stale"] and seen["last_seen"].startswith((now - timedelta(days=30)).date().isoformat())
        assert_same(figures(behind), figures(world["want"]))  # its last figures still count
        listing = ctxlamp(world["a"], "devices").stdout
        assert " seen " in listing and "Not seen for a while" in listing
        assert max(map(len, listing.splitlines())) <= 80
    finally:
        path.write_bytes(whole)


def test_with_a_passphrase_the_folder_holds_no_figures_and_the_totals_hold(tmp_path, world):
    pytest.importorskip("cryptography")
    every, shared = world["every"], tmp_path / "cloud"
    shared.mkdir()
    a = machine(tmp_path, "laptop", every, (COMMON, *ONLY_A))
    b = machine(tmp_path, "desktop", every, (COMMON, *ONLY_B))
    for env in (a, b):
        r = subprocess.run([str(CTXLAMP), "sync", "--passphrase"], env=env, input="correct horse battery\n",
                           capture_output=True, text=True, timeout=60, check=True)
        assert "encrypted" in r.stdout
        ctxlamp(env, "sync", "--folder", str(shared))
    for f in shared.glob("ctxlamp-device-*.json"):
        assert b"claude-" not in f.read_bytes() and b"cache_read" not in f.read_bytes()
    assert_same(figures(report(a)), figures(world["want"]))
    # a device with another passphrase reads none of them, and says so for each
    c = machine(tmp_path, "tablet", every, (COMMON,))
    subprocess.run([str(CTXLAMP), "sync", "--passphrase"], env=c, input="another passphrase\n",
                   capture_output=True, text=True, timeout=60, check=True)
    ctxlamp(c, "sync", "--folder", str(shared))
    got = report(c)
    assert [d["name"] for d in got["devices"]] == [got["devices"][0]["name"]]
    assert len([row for row in got["sync"]["skipped"] if "passphrase" in row["reason"]]) == 2


def test_a_period_sums_the_devices_days_inside_it(world):
    days = sorted(world["want"]["spend"]["billed"]["by_day"])
    assert len(days) >= 2
    since = days[1]  # leaves out the first day's sessions, on whichever device they are
    want = figures(json.loads(ctxlamp(world["single"], "report", "--json", "--timezone", "UTC", "--since", since)
                              .stdout))
    got = report(world["a"], "--since", since)
    assert_same(figures(got), want)
    assert min(got["spend"]["billed"]["by_day"]) == since


def test_forget_drops_a_device_and_off_stops_writing(tmp_path, world):
    every, shared = world["every"], tmp_path / "share"
    shared.mkdir()
    a = machine(tmp_path, "laptop", every, ONLY_A)
    b = machine(tmp_path, "old-laptop", every, ONLY_B)
    for env, name in ((a, "laptop"), (b, "old-laptop")):
        ctxlamp(env, "sync", "--name", name)
        ctxlamp(env, "sync", "--folder", str(shared))
    assert ctxlamp(a, "devices", "forget", "laptop", check=False).returncode == 2  # this device: refused
    missing = ctxlamp(a, "devices", "forget", "desktop", check=False)
    assert missing.returncode == 2 and "old-laptop" in missing.stderr
    assert "Forgot old-laptop" in ctxlamp(a, "devices", "forget", "OLD-LAPTOP").stdout
    assert [d["name"] for d in report(a)["devices"]] == ["laptop"]
    ctxlamp(b, "sync", "--off")
    assert "--device needs sync" in ctxlamp(b, "report", "--device", "laptop", check=False).stderr
    assert [f.name for f in shared.glob("ctxlamp-device-*")] == [f"ctxlamp-device-{report(a)['devices'][0]['id']}.json"]
    ctxlamp(b, "report", "--json")  # sync off: its own report, nothing written to the folder
    assert len(list(shared.glob("ctxlamp-device-*"))) == 1


def test_a_report_over_other_files_leaves_this_device_s_file_alone(world, tmp_path):
    own = next(f for f in world["shared"].glob("ctxlamp-device-*.json")
               if json.loads(f.read_bytes())["device"]["name"] == "laptop")
    before = own.read_bytes()
    other = tmp_path / "elsewhere"
    other.mkdir()
    one_off = report(world["a"], "--projects", str(other))
    assert one_off["spend"]["calls"] == 0 and "devices" not in one_off
    assert own.read_bytes() == before
    refused = ctxlamp(world["a"], "report", "--projects", str(other), "--device", "all", check=False)
    assert refused.returncode == 2 and "one-off" in refused.stderr
