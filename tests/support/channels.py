"""Helpers for the channel tests: the real price table, in-memory scan results, and what the meters make of a
file when every line is parsed (the reference the scanner's byte-level skipping is held to)."""
from __future__ import annotations

import json
from functools import lru_cache

from resources import resource_path
from service.channels import ChannelMeters
from service.channels.spend import SpendCollector
from service.report.scan import SizeMemo, TranscriptFile, scan_bytes
from service.engine.prices import PriceTable
from service.engine_setup.tokenizer import encode_len
from tests.support.transcripts import to_bytes


@lru_cache(maxsize=1)
def price_table() -> PriceTable:
    return PriceTable.from_json(json.load(open(resource_path("prices.json"), encoding="utf-8")))


def price_lookup():
    return price_table().lookup


def result_file(entries, *, subagent=False, sizes=None, project="-p", session="s1") -> dict:
    """What scan.py makes of a transcript holding `entries`."""
    tf = TranscriptFile(f"/virtual/{session}.jsonl", project, subagent, session)
    return scan_bytes(to_bytes(entries), tf, sizes if sizes is not None else SizeMemo(), encode_len)


def run_meters(entries, sizes=None, *, sidechain_file=False):
    from service.channels import ChannelMeters
    m = ChannelMeters("s1", sidechain_file=sidechain_file, count_tokens=encode_len)
    out = []
    for e in entries:
        out += m.feed(e, sizes)
    return m, out


def fixture_file(p) -> TranscriptFile:
    return TranscriptFile(str(p), "p", "subagents" in p.parts or p.name.startswith("agent-"), p.stem)


def every_line_reference(data: bytes, tf):
    """What the meters make of a file when every line is parsed (no byte-level skipping)."""
    meters = ChannelMeters(tf.session_hint, sidechain_file=tf.subagent, count_tokens=encode_len)
    spend = SpendCollector(sidechain_file=tf.subagent)
    events = []
    for line in data.split(b"\n"):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        spend.feed(entry)
        events += [e.to_dict() for e in meters.feed(entry, SizeMemo())]
    return events, list(spend.calls.values()), spend.cost_state
