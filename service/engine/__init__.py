"""The measurement engine: transcript entries in, status snapshots out.

Pure: no file, socket, clock, database or Qt. Everything it needs (prices,
a token counter, a path-existence predicate) is handed in by the caller, so a
replay from byte zero and live ingestion give the same results.

Public surface (see ../../docs/engine.md for the contract in prose):

    from service.engine import (
        LineSplitter, parse_line, Malformed, Entry,
        SessionEngine, EngineConfig, PriceTable, TokenCounter,
    )

    counter = TokenCounter(encode_len)          # encode_len(text) -> o200k token count
    eng = SessionEngine(transcript="/path/x.jsonl", prices=PriceTable.from_json(obj),
                        counter=counter, config=EngineConfig(), path_exists=os.path.exists)
    splitter = LineSplitter()
    for line in splitter.feed(chunk_bytes):       # complete lines only; a partial tail is held back
        eng.feed_line(line)                      # parses, counts skipped_lines, ingests
    events = eng.drain_events()                  # replay events ready so far (call/reset/reminder)
    eng.snapshot()                               # the status snapshot now (MEASUREMENT.md section 10)
    eng.finish(end_reason="end")                 # closes the open segment; drain_events() then ends with "end"
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
