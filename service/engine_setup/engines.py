"""Building engines the same way everywhere (replay, live service, demo, benches).

The one place that loads prices and the offline tokenizer and turns config
into an EngineConfig, so that replay and live ingestion cannot drift apart.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from service.engine import EngineConfig, PriceTable, SessionEngine, TokenCounter
from service.engine_setup.fsprobe import make_path_exists


@lru_cache(maxsize=1)
def bundled_prices_json() -> dict:
    from resources import resource_path

    with open(resource_path("prices.json"), "rb") as fh:
        return json.load(fh)


def load_prices(override: Path | None = None) -> PriceTable:
    table = PriceTable.from_json(bundled_prices_json())
    if override is not None and override.exists():
        with open(override, "rb") as fh:
            table = table.merged(json.load(fh))
    return table


_counter: TokenCounter | None = None


def shared_counter(use_cache: bool = True) -> TokenCounter:
    """One token counter per process, so identical texts are tokenized once across sessions."""
    global _counter
    if not use_cache:
        from service.engine_setup.tokenizer import encode_len

        return TokenCounter(encode_len, use_cache=False)
    if _counter is None:
        from service.engine_setup.tokenizer import encode_len

        _counter = TokenCounter(encode_len)
    return _counter


def share_encoder() -> TokenCounter:
    """The shared counter with tiktoken's encoder built, before workers fork: they share both copy-on-write and
    count at tiktoken's pace from their first text (decisions 460, 510)."""
    from service.engine_setup.tokenizer import load_o200k

    load_o200k()
    return shared_counter()  # the engine's modules too (40-50 ms in each worker): imported once, inherited


def new_engine(transcript: str, prices: PriceTable, config: EngineConfig | None = None,
               counter: TokenCounter | None = None, full_events: bool = True,
               call_rows: bool = True, restart_only: bool = False) -> SessionEngine:
    holder: dict = {}
    engine = SessionEngine(transcript=transcript, prices=prices, counter=counter or shared_counter(),
                           config=config, path_exists=make_path_exists(lambda: holder["e"].cwd),
                           full_events=full_events, call_rows=call_rows, restart_only=restart_only)
    holder["e"] = engine
    return engine


def replay_file(path: str | Path, prices: PriceTable, config: EngineConfig | None = None,
                counter: TokenCounter | None = None, chunk_size: int = 1 << 20, full_events: bool = True,
                max_line: int | None = None, read_from: str | Path | None = None):
    """Replay a transcript from byte zero; yields replay events as they become final.

    Read as the live service reads it (service/ingest/transcript_file.py, lines of at
    most `max_line` bytes): transcript_file.Skipped for what is not a regular file.
    `read_from`: where its bytes are when not at `path` (the service's kept copy of a deleted one).
    """
    from service.engine import LineSplitter
    from service.ingest.kept import read_chunks as chunks

    engine = new_engine(str(path), prices, config, counter, full_events)
    splitter = LineSplitter() if max_line is None else LineSplitter(max_line)
    for chunk in chunks(read_from or path, chunk_size):
        for line in splitter.feed(chunk):
            engine.feed_line(line)
        yield from engine.drain_events()
    # An unfinished last line is held back, as the live service holds it: replay and live agree
    # on the same bytes. The end event says how much was held.
    engine.held_back_bytes = splitter.pending
    engine.finish("end")
    yield from engine.drain_events()
