"""The rewind sessions the real CLI wrote under tmux (tests/fixtures/rewind/, tests/fakeapi/make_rewind_fixtures.py):
their steps, files and the fake API's log, and the engine's events over them fed in any chunking."""
from __future__ import annotations

import json
from pathlib import Path

from service.engine import LineSplitter
from service.engine_setup.engines import load_prices, new_engine
from tests.support.corpus import REWIND

FIXTURE = REWIND
STEPS = json.loads((FIXTURE / "steps.json").read_text())
FORK_STEP = next(s for s in STEPS if "fork_of" in s)
SESSIONS = next((FIXTURE / "projects").iterdir())
MAIN = SESSIONS / f"{FORK_STEP['fork_of']}.jsonl"
FORK = SESSIONS / f"{FORK_STEP['session_id']}.jsonl"
API = {r["id"]: r for r in map(json.loads, (FIXTURE / "api.jsonl").read_text().splitlines())}
PRICES = load_prices()


def events_of(data: bytes, full: bool = True, cuts: list[int] | None = None, path: Path = MAIN
              ) -> tuple[list[dict], object]:
    """The engine's events over `data`, read as the transcript `path` (whose name says whose session it is)."""
    eng = new_engine(str(path), PRICES, full_events=full)
    splitter, pos = LineSplitter(), 0
    for cut in (cuts or []) + [len(data)]:
        for line in splitter.feed(data[pos:pos + cut]):
            eng.feed_line(line)
        pos += cut
    eng.finish()
    return eng.drain_events(), eng
