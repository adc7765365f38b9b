"""The measurement engine: transcript entries in, status snapshots out.

Pure: no file, socket, clock, database or Qt. Everything it needs (prices,
a token counter, a path-existence predicate) is handed in by the caller, so a
replay from byte zero and live ingestion give the same results.

Public surface (build engines with service.engine_setup.engines.new_engine / replay_file, which load
prices and the offline tokenizer the same way everywhere):

    from service.engine_setup.engines import load_prices, new_engine, replay_file
    eng = new_engine("/path/x.jsonl", load_prices(), config=EngineConfig(), full_events=False)
    splitter = LineSplitter()
    for line in splitter.feed(chunk_bytes):      # complete lines only; a partial tail is held back
        entry = eng.feed_line(line)              # parsed dict (for channels/turn records) or None
    eng.drain_events()   # replay events so far: {"event": "call"|"reset"|"reminder"|"end", ...}
                         # full_events=True: call events are whole snapshots (ctxlamp replay);
                         # False: call events are series rows + session_id (cheap; the service)
    eng.snapshot()       # the status snapshot now (docs/measurement.md section 10), skeleton curve included
    eng.live_series()    # per-call series rows, the pending call included; eng.resets, eng.reminders
    eng.path_rows()      # [{"path", "tokens", "selected", "why"}] of the open segment
    eng.set_excluded(paths) / eng.set_config(cfg) / eng.set_prices(table) / eng.recheck_paths()
                         # revaluations: later increments only, nothing withdrawn
    eng.transcript_missing = True   # lamp no_transcript (the file is gone)
    eng.finish(end_reason)          # archive the open segment (profile appended to eng.profiles)
                                    # and queue the "end" event; eng.profiles holds every profile
    eng.ledger_state()   # what a rent-ledger checkpoint keeps
"""
from importlib import import_module
from typing import TYPE_CHECKING, Any

from service.engine_setup.compiled import select as _select_build

_select_build()  # the mypyc build of these modules when it matches their source, else this source

if TYPE_CHECKING:  # what the lazy exports are, for the type checker (imported for real on first use)
    from service.engine.lines import LineSplitter as LineSplitter
    from service.engine.parse import Entry as Entry
    from service.engine.parse import Malformed as Malformed
    from service.engine.parse import parse_line as parse_line
    from service.engine.prices import Price as Price
    from service.engine.prices import PriceTable as PriceTable
    from service.engine.session import EngineConfig as EngineConfig
    from service.engine.session import SessionEngine as SessionEngine
    from service.engine.tokens import TokenCounter as TokenCounter

# Exports are loaded on first use: `ctxlamp report` needs only service.engine.prices,
# and importing the whole engine with it cost 11 ms of a half-second report.
_EXPORTS = {
    "LineSplitter": "lines", "parse_line": "parse", "Malformed": "parse", "Entry": "parse",
    "Price": "prices", "PriceTable": "prices", "TokenCounter": "tokens",
    "EngineConfig": "session", "SessionEngine": "session",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
