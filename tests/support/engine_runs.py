"""A session's entries fed to a fresh engine (with the bundled prices), and the calls among its events."""
from __future__ import annotations

from service.engine_setup.engines import load_prices, new_engine
from tests.support import transcripts as T

PRICES = load_prices()


def run(entries, config=None, engine=None):
    eng = engine or new_engine("/tmp/session.jsonl", PRICES, config)
    for line in T.to_bytes(entries).splitlines():
        eng.feed_line(line)
    eng.finish()
    return eng, eng.drain_events()


def calls_of(events):
    return [e for e in events if e["event"] == "call"]
