"""The report's byte-level line filter never drops a line a meter needs (service/report/scan.py).

Lines are JSON objects with typed blocks nested at any depth (tool results, attachments), so the
top-level "type" is often undecided from the bytes; such a line must be kept whenever any of
its type values would be.
"""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from service.report.scan import wanted_lines

TYPES = ("assistant", "user", "system", "cost-state", "progress", "attachment", "text", "tool_result")
block = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(TYPES), "text": st.text(max_size=5)}),
    lambda inner: st.fixed_dictionaries({"type": st.sampled_from(TYPES), "content": st.lists(inner, max_size=3)}),
    max_leaves=6)


@st.composite
def line(draw) -> dict:
    top = draw(st.sampled_from(TYPES[:6]))
    before = draw(st.lists(block, max_size=2))
    after = draw(st.lists(block, max_size=2))
    entry: dict = {"parentUuid": None, "message": {"content": before}, "type": top, "toolUseResult": {"x": after}}
    if draw(st.booleans()):
        entry["message"]["content"].append({"type": "tool_result", "tool_use_id": draw(st.sampled_from(("t1", "t2")))})
    if draw(st.booleans()):
        entry["subtype"] = "compact_boundary"
    return entry


def needed(entry: dict, pending: tuple[dict, ...]) -> bool:
    kind = entry["type"]
    if kind in ("assistant", "cost-state"):
        return True
    if kind == "system":
        return entry.get("subtype") == "compact_boundary"
    if kind == "user":
        ids = {b.get("tool_use_id") for b in entry["message"]["content"] if isinstance(b, dict)}
        return any(i in p for p in pending for i in ids)
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(line(), min_size=1, max_size=8), st.sampled_from(({}, {"t1": 1}, {"t2": 1})))
def test_every_line_a_meter_needs_is_kept(entries, waiting):
    pending = (waiting, {})
    data = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in entries)
    kept = {data[s:e] for s, e in wanted_lines(data, len(data), True, pending)}
    for e in entries:
        raw = json.dumps(e, separators=(",", ":")).encode()
        if needed(e, pending):
            assert raw in kept


RAW = st.sampled_from([
    b'{"type":"cost-state","totalCostUSD":1.5,"modelUsage":{}}',
    b'{"type":"progress","data":{"type":"assistant"}}',
    b'{ "type": "progress", "x": {"type":"assistant","message":{"id":"m9","usage":{"input_tokens":1}}}}',
    b'{"type":"summary","summary":"s"}',
    b'  {"type":"cost-state","totalCostUSD":2.0}',
    b'{"type": "assistant", "message": {"id": "m8", "usage": {"output_tokens": 3}}}',
    b'{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":5}}}',
    b'{"parentUuid":null,"attachment":{"type":"user"},"type":"attachment","uuid":"a1"}',
    b'{"type":"system","subtype":"compact_boundary","compactMetadata":{"preTokens":9}}',
    b"not json", b"   ", b"", b"[1,2]", b'{"type":"user"',
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(line().map(lambda e: json.dumps(e, separators=(",", ":")).encode()), RAW), max_size=12))
def test_the_scan_reads_the_same_lines_with_the_replay_splitting_them(lines):
    """A report's worker replays a main transcript from the scan's split and hands the scan the lines
    left to judge: the scan's result is the one it gets reading the file alone."""
    from service.engine_setup.engines import load_prices
    from service.report.restart import Replay
    from service.report.scan import SizeMemo, TranscriptFile, scan_chunks

    data = b"".join(raw + b"\n" for raw in lines)
    tf = TranscriptFile("/nowhere/p/s.jsonl", "p", False, "s")
    alone = scan_chunks([data], tf, SizeMemo(), defer_tokens=True)
    with_replay = scan_chunks([data], tf, SizeMemo(), defer_tokens=True, replay=Replay(tf.path, load_prices()))
    assert with_replay == alone
