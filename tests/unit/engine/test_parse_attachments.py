"""Attachment lines are decoded for their links only, and count as malformed exactly when orjson says so.

Every reader (the live service, `ctxlamp replay`, the report) parses lines through `parse_line`, so
what it makes of an attachment line is what the engine's tree and its skipped-line count see.
"""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.engine.parse import Malformed, parse_line

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LINK = ("type", "uuid", "parentUuid", "isSidechain", "timestamp", "sessionId")


def _verdict(line: bytes):
    try:
        return parse_line(line)
    except Malformed:
        return "malformed"


def _expected(line: bytes):
    """What the full decoder makes of the line: its entry, or "malformed"."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "malformed"
    return obj if isinstance(obj, dict) else "malformed"


def _agrees(line: bytes) -> None:
    got, full = _verdict(line), _expected(line)
    if got is None:
        return  # a type skipped by its opening bytes, as before
    assert (got == "malformed") == (full == "malformed"), (line[:120], got)
    if full == "malformed":
        return
    links = {k: full[k] for k in LINK if k in full}
    assert got == full or (full.get("type") == "attachment" and got == links), (line[:120], got)


def test_real_attachment_lines_keep_their_links_and_drop_their_bodies():
    lines = [line for path in sorted(FIXTURES.rglob("*.jsonl"))
             for line in path.read_bytes().splitlines() if b'"attachment":{' in line[:512]]
    assert len(lines) > 50, "the fixtures hold attachment lines"
    lean = 0
    for line in lines:
        _agrees(line)
        got = parse_line(line)
        full = orjson.loads(line)
        if full.get("type") == "attachment":
            assert got == {k: full[k] for k in LINK if k in full}
            lean += 1
    assert lean > 50


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40))
_bodies = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                       max_leaves=20)
_link_values = st.one_of(st.text(max_size=36), st.none(), st.booleans(), st.integers(0, 9))


@st.composite
def attachment_lines(draw) -> bytes:
    obj = {"parentUuid": draw(_link_values), "isSidechain": draw(st.booleans()),
           "attachment": {"type": draw(st.sampled_from(["prompt_snapshot", "file", "skill_listing"])),
                          "body": draw(_bodies)},
           "type": draw(st.sampled_from(["attachment", "attachment", "user", "progress"])),
           "uuid": draw(_link_values), "timestamp": draw(_link_values), "rendered": draw(st.text(max_size=60))}
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


_damage = st.sampled_from([b"", b"\x00", b"\x1f", b"\xff", b"\xc3", b'"', b"\\", b"}", b"]", b",", b"\n",
                           b'{"parentUuid":"x","isSidechain":false,"attachment":{', b"\\ud800", b"\\u12"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(attachment_lines(), st.integers(0, 10_000), st.integers(0, 3), _damage)
def test_a_damaged_or_odd_attachment_line_counts_as_the_full_decoder_counts_it(line, at, cut, damage):
    """A crash's cut, a disk error's byte, text glued on: malformed exactly when orjson refuses the line."""
    _agrees(line)
    at %= len(line) + 1
    _agrees(line[:at] + damage + line[at + cut:])
    _agrees(line[:at])


@pytest.mark.parametrize("line", [
    b'{"parentUuid":null,"isSidechain":false,"attachment":{"type":"file","n":' + b"[" * 1100 + b"]" * 1100 + b'},'
    b'"type":"attachment","uuid":"u"}',
    b'{"parentUuid":"p","isSidechain":false,"attachment":{"type":"file"},"type":"attachment","uuid":"a","uuid":"b"}',
    b'{"parentUuid":"p","isSidechain":false,"attachment":{"type":"file"},"type":"attachment","uuid":12345678901234567890123}',
    b'{"parentUuid":"p","isSidechain":false,"attachment":{"type":"file","t":"\xe2\x86\x92"},"type":"attachment","uuid":"u"}',
    b'{"parentUuid":"p","isSidechain":false,"attachment":{"type":"file","t":"\xed\xa0\x80"},"type":"attachment","uuid":"u"}',
    b'[{"parentUuid":"p","isSidechain":false,"attachment":{"type":"file"},"type":"attachment","uuid":"u"}]',
])
def test_edge_lines_agree_with_the_full_decoder(line):
    _agrees(line)
