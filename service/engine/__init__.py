"""The measurement engine: transcript entries in, status snapshots out.

Pure: no file, socket, clock, database or Qt. Everything it needs (prices,
a token counter, a path-existence predicate) is handed in by the caller, so a
replay from byte zero and live ingestion give the same results.

Public surface (build engines with service.measure.new_engine / replay_file, which load
prices and the offline tokenizer the same way everywhere):

    from service.measure import load_prices, new_engine, replay_file
    eng = new_engine("/path/x.jsonl", load_prices(), config=EngineConfig(), full_events=False)
    splitter = LineSplitter()
    for line in splitter.feed(chunk_bytes):      # complete lines only; a partial tail is held back
        entry = eng.feed_line(line)              # parsed dict (for channels/turn records) or None
    eng.drain_events()   # replay events so far: {"event": "call"|"reset"|"reminder"|"end", ...}
                         # full_events=True: call events are whole snapshots (ctxlamp replay);
                         # False: call events are series rows + session_id (cheap; the service)
    eng.snapshot()       # the status snapshot now (MEASUREMENT.md section 10), skeleton curve included
    eng.live_series()    # per-call series rows, the pending call included; eng.resets, eng.reminders
    eng.path_rows()      # [{"path", "tokens", "selected", "why"}] of the open segment
    eng.set_excluded(paths) / eng.set_config(cfg) / eng.set_prices(table) / eng.recheck_paths()
                         # revaluations: later increments only, nothing withdrawn
    eng.transcript_missing = True   # lamp no_transcript (the file is gone)
    eng.finish(end_reason)          # archive the open segment (profile appended to eng.profiles)
                                    # and queue the "end" event; eng.profiles holds every profile
    eng.ledger_state()   # what a rent-ledger checkpoint keeps
"""
from service.engine.lines import LineSplitter
from service.engine.parse import Entry, Malformed, parse_line
from service.engine.prices import Price, PriceTable
from service.engine.tokens import TokenCounter
from service.engine.session import EngineConfig, SessionEngine

__all__ = [
    "LineSplitter", "parse_line", "Malformed", "Entry", "Price", "PriceTable",
    "TokenCounter", "EngineConfig", "SessionEngine",
]
