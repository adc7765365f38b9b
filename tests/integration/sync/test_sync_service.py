"""The service's side of sync, through its real HTTP API (what Settings and the Overview use): turned on
by a config change, `POST /api/v1/sync/now` writes this device's file, `GET /api/v1/sync` lists the
devices, with the same billed total `ctxlamp report` gives for this machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.corpus import ROOT, copy_fixtures
from tests.support.service_proc import Svc


@pytest.fixture
def svc(tmp_path):
    claude = copy_fixtures(tmp_path / "claude")
    s = Svc(tmp_path / "home", claude, {"HOME": str(tmp_path / "user"), "CTXLAMP_BUDGET_EVERY_S": "1"}).start(
        timeout=120)
    yield s
    s.stop()


def test_settings_turn_sync_on_and_the_service_writes_this_device(svc, tmp_path):
    status, off = svc.request("POST", "/api/v1/sync/now", {})
    assert status == 409 and "off" in off["error"]
    folder = tmp_path / "OneDrive" / "ctxlamp"
    folder.mkdir(parents=True)
    status, body = svc.request("POST", "/api/v1/config", {"sync": {"folder": "relative/folder"}})
    assert status == 400 and "whole path" in body["error"]
    status, _ = svc.request("POST", "/api/v1/config", {"sync": {"folder": str(folder), "name": "studio"}})
    assert status == 200
    status, view = svc.request("POST", "/api/v1/sync/now", {})
    assert status == 200, view
    assert view["on"] and view["device"]["name"] == "studio"
    assert [(d["name"], d["this"]) for d in view["devices"]] == [("studio", True)]
    assert [f.name for f in folder.iterdir() if f.name.startswith("ctxlamp-device-")] == [
        f"ctxlamp-device-{view['device']['id']}.json"]
    env = {**os.environ, **svc.env}
    mine = json.loads(subprocess.run([sys.executable, "-m", "service.cli", "report", "--json", "--no-service",
                                      "--device", "this", "--timezone", "UTC"], env=env, cwd=ROOT,
                                     capture_output=True, text=True, check=True, timeout=300).stdout)
    assert view["devices"][0]["total_usd"] == pytest.approx(mine["spend"]["billed"]["usd"], abs=1e-8)
    assert svc.get("/api/v1/sync")["last"]["ok"] is True


def test_the_command_turns_sync_on_in_the_running_service(svc, tmp_path):
    folder = tmp_path / "Syncthing"
    folder.mkdir()
    env = {**os.environ, **svc.env}
    r = subprocess.run([sys.executable, "-m", "service.cli", "sync", "--folder", str(folder)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    view = svc.get("/api/v1/sync")
    assert view["on"] and view["folder"] == str(folder.resolve())  # the service knows at once, no restart
    status, answer = svc.request("POST", "/api/v1/sync/now", {})
    assert status == 200, answer
    r = subprocess.run([sys.executable, "-m", "service.cli", "sync", "--off"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and svc.get("/api/v1/sync")["on"] is False


def test_budgets_count_every_device(svc, tmp_path):
    """Another device spent $3 today (its file in the folder, one session of it also on this device's
    copy, counted once): the service's budgets say so, in UTC days."""
    from datetime import datetime, timezone
    import time

    from service.sync import folder as shared
    from service.sync.fileformat import DeviceFile, SessionFigures, session_key

    today = datetime.now(timezone.utc).date().isoformat()
    row = [today, "claude-sonnet-4-5", "", 2, 2, 0, 1, 1, 1, 1, 1.0, 0.5, 0.0, 0.0]
    other = DeviceFile("a" * 32, "desktop", f"{today}T00:00:00Z", "hash", {
        session_key("s-1"): SessionFigures(f"{today}T00:00:01Z", [row]),
        session_key("s-2"): SessionFigures(f"{today}T00:00:02Z", [row])})
    twin = DeviceFile("b" * 32, "tablet", f"{today}T00:00:00Z", "hash", {
        session_key("s-2"): SessionFigures(f"{today}T00:00:02Z", [row])})  # the same session, seen there too
    folder = tmp_path / "Dropbox"
    folder.mkdir()
    shared.write(folder, other)
    shared.write(folder, twin)
    status, _ = svc.request("POST", "/api/v1/config", {"sync": {"folder": str(folder)},
                                                       "budgets": {"daily_usd": 10.0, "monthly_usd": 100.0}})
    assert status == 200
    assert svc.request("POST", "/api/v1/sync/now", {})[0] == 200
    deadline = time.monotonic() + 60
    block = None
    while time.monotonic() < deadline:
        block = svc.get("/api/v1/status").get("budgets")
        if block and block.get("daily") and block["daily"]["spent_usd"] > 0:
            break
        time.sleep(0.2)
    assert block is not None and block["timezone"] == "UTC"
    assert block["daily"]["spent_usd"] == pytest.approx(3.0)  # the fixtures' own calls are days old
    assert block["devices"] == 3


def test_an_idle_service_reads_the_others_and_leaves_its_file(svc, tmp_path):
    """Nothing written by Claude Code since the last sync: the scheduled sync reads the folder (another
    device's new file shows) and does not compute this device's file again."""
    import time

    from service.sync import folder as shared
    from tests.support.sync_files import good

    folder = tmp_path / "share"
    folder.mkdir()
    status, _ = svc.request("POST", "/api/v1/config", {"sync": {"folder": str(folder), "every": "10s"}})
    assert status == 200
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not svc.get("/api/v1/sync")["last"]:
        time.sleep(0.2)  # the folder just set: the first sync comes at once
    (own,) = folder.glob("ctxlamp-device-*.json")
    written = own.stat().st_mtime_ns
    shared.write(folder, good())  # another device writes meanwhile
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "unchanged" not in svc.get("/api/v1/sync")["last"].get("message", ""):
        time.sleep(0.5)
    view = svc.get("/api/v1/sync")
    assert "unchanged" in view["last"]["message"] and own.stat().st_mtime_ns == written
    assert sorted(d["name"] for d in view["devices"])[0] == "laptop"
