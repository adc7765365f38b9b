"""The transcript scanner: layout discovery, byte-level skipping, the process pool and the cache."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from service.report.scan import (ScanCache, SizeMemo, discover, scan,
                                   scan_bytes)
from service.channels.spend import IN, KEY, OUT, SIDE, TS
from service.engine_setup.tokenizer import encode_len
from tests.support.channels import every_line_reference, fixture_file
from tests.support.corpus import all_transcripts, fixture_tree, REAL_FIXTURES
from tests.support.expected import EXPECTED, fixture_path, REAL_EXPECTED

# Every fixture transcript; the third-party ones run when they are beside the checkout.


# Lines a line filter must not be fooled by: a nested message that looks like an assistant call in a
# progress line that is not a subagent's (a hook's progress), type keys inside strings, braces inside
# strings, junk; and one it must keep: a subagent's call reported in an `agent_progress` line (Claude
# Code 2.1.9 to 2.1.39 wrote them; the call is billed and sometimes recorded nowhere else).
AGENT_PROGRESS = {"type": "progress", "timestamp": "2026-01-17T05:05:46.193Z", "data": {
    "type": "agent_progress", "agentId": "a1d20e2", "message": {
        "type": "assistant", "timestamp": "2026-01-17T05:05:46.182Z", "requestId": "req_progress",
        "message": {"id": "msg_progress", "model": "claude-sonnet-4-5", "role": "assistant",
                    "content": [{"type": "text", "text": "reading"}],
                    "usage": {"input_tokens": 2, "cache_creation_input_tokens": 3209, "output_tokens": 6}}}}}
DECOYS = [
    {"type": "progress", "data": {"type": "hook_progress", "message": {"type": "assistant", "message": {
        "id": "msg_decoy", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 9, "output_tokens": 9}}}}},
    AGENT_PROGRESS,
    {"parentUuid": "x", "attachment": {"type": "assistant", "content": "{\"type\":\"assistant\"}"}, "type": "attachment"},
    {"cwd": "/tmp/{odd}dir", "type": "user", "message": {"role": "user", "content": "}\"type\":\"assistant\"{"}},
    {"type": "system", "subtype": "informational", "content": "compact_boundary is only a word here"},
]
JUNK = [b"", b"   ", b"[1,2]", b'{"type":"assistant","message":{"id":"m_torn",', b"\x00\xff not json", b'"type":"user"']


def _shuffled_keys(entry: dict, rnd) -> dict:
    keys = list(entry)
    rnd.shuffle(keys)
    return {k: entry[k] for k in keys}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(sorted(EXPECTED) + (sorted(REAL_EXPECTED) if REAL_FIXTURES.is_dir() else [])), rnd=st.randoms(use_true_random=False),
       spaced_share=st.sampled_from([0.0, 0.1, 1.0]), decoys=st.integers(0, 6))
def test_the_line_filter_keeps_every_line_a_meter_needs(key, rnd, spaced_share, decoys):
    """Any key order, spaced or compact JSON, decoys and junk: scanning equals parsing every line."""
    p = fixture_path(key)
    tf = fixture_file(p)
    lines = []
    for raw in p.read_bytes().splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            lines.append(raw)
            continue
        if isinstance(entry, dict) and rnd.random() < 0.5:
            entry = _shuffled_keys(entry, rnd)
        lines.append(json.dumps(entry).encode() if rnd.random() < spaced_share
                     else json.dumps(entry, separators=(",", ":")).encode())
    for _ in range(decoys):
        extra = rnd.choice([json.dumps(d, separators=(",", ":")).encode() for d in DECOYS] + JUNK)
        lines.insert(rnd.randrange(len(lines) + 1), extra)
    data = b"\n".join(lines) + b"\n"
    got = scan_bytes(data, tf, SizeMemo(), encode_len)
    events, calls, cost_state = every_line_reference(data, tf)
    assert got["events"] == events
    assert got["calls"] == calls
    assert got["cost_state"] == cost_state


def test_a_subagents_call_in_a_progress_line_is_a_sidechain_call_and_its_decoy_is_not(tmp_path):
    lines = [json.dumps(d, separators=(",", ":")).encode() for d in DECOYS]
    tf = fixture_file(tmp_path / "main.jsonl")
    got = scan_bytes(b"\n".join(lines) + b"\n", tf, SizeMemo(), encode_len)
    assert [(c[KEY], c[TS], c[SIDE], c[IN:OUT + 1]) for c in got["calls"]] == [
        ("msg_progress", "2026-01-17T05:05:46.182Z", True, [2, 3209, 0, 0, 6])]


def test_process_pool_gives_the_same_results_as_one_process(tmp_path):
    files = discover(fixture_tree(tmp_path))
    serial = scan(files, ScanCache(None), workers=1)
    pooled = scan(files, ScanCache(None), workers=2, pool_min_bytes=0)
    assert pooled == serial and len(serial) == len(files) == len(all_transcripts())
