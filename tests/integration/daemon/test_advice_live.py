"""The priced moves in a real service's /api/v1/status, over the horizon and compaction its History teaches
(docs/measurement.md section 15)."""
from __future__ import annotations

import json

from service.engine import EngineConfig
from service.engine.advice import AdviceBasis
from service.store import Store
from tests.support.corpus import scenario_session
from tests.support.engine_runs import run
from tests.support.harness import wait_for
from tests.support.service_proc import Svc


def test_status_carries_the_advice_priced_over_the_users_usual_run(tmp_path):
    home, claude = tmp_path / "home", tmp_path / "claude"
    (claude / "projects" / "-p").mkdir(parents=True)
    home.mkdir()
    store = Store(home / "ctxlamp.db")
    try:  # this user's History: runs of 4, 10 and 30 calls after a reminder; compactions that kept 2, 4 and 50 %
        for seg, (after, keep) in enumerate([(4, 0.02), (10, 0.5), (30, None), (None, 0.04)]):
            store.sessions.archive_profile({"session_id": "old", "segment": seg, "started_at": "2026-11-01T09:00:00Z",
                                   "ended_at": "2026-11-01T10:00:00Z", "calls": 40, "path_totals": {},
                                   "restart_savings": {"first_reminder_call": None if after is None else 5,
                                                       "first_reminder_usd": 0.0, "best_call": None, "best_usd": 0.0,
                                                       "calls_after_reminder": after, "compaction_keep": keep}})
    finally:
        store.close()
    transcript = scenario_session("long-session")
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    learnt = AdviceBasis(horizon_calls=10.0, compact_keep=0.04)
    _, events = run(entries, EngineConfig(advice=learnt))
    want = events[-1]["status"]
    s = Svc(home, claude).start()
    try:
        (claude / "projects" / "-p" / transcript.name).write_bytes(transcript.read_bytes())

        def final() -> dict | None:
            snap = s.session(want["session_id"])
            return snap if snap and snap["calls"] == want["calls"] and snap["advice"] == want["advice"] else None

        snap = wait_for(final, what="the session's last call with the learnt advice")
    finally:
        s.stop()
    advice = snap["advice"]
    assert advice["horizon_calls"] == 10.0 and advice["label"] == "estimated"
    assert advice["move"] in ("compact", "restart") and advice["saves_usd"] > 0  # past its reminders
    priced = {m: advice[f"{m}_usd"] for m in ("continue", "compact", "restart")}
    assert priced[advice["move"]] == min(priced.values())
    assert advice["saves_usd"] == advice["continue_usd"] - priced[advice["move"]]
