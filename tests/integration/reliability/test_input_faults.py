"""Input faults: transcripts mixing valid entries with every kind of damage.

Properties: the engine never crashes on bad input, every valid call is
measured, and live ingestion in arbitrary chunks equals a replay of the whole.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.engine import LineSplitter
from service.engine_setup.engines import load_prices, new_engine
from tests.support import transcripts as T
from tests.support.corpus import ROOT

PRICES = load_prices()

damage = st.sampled_from([
    b"", b"\x00\x01\x02", b"{", b'{"type": "assistant"', b"\xff\xfe\xfd\xfc", b"null", b"[]", b"42",
    b'{"type": "assistant", "message": {"id": "bad", "model": "m", "usage": "lots"}}',
    b'{"type": "assistant", "message": {"id": "bad2", "model": "m", "usage": {"input_tokens": -5}}}',
    b'{"type": "user", "message": {"content": 42}}',
    b'{"type": "user", "message": "text"}',
    b'{"type": "system", "subtype": "compact_boundary", "isSidechain": true}',
    b'{"type": "assistant", "message": {"id": "bad3", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1e400}}}',
])


@st.composite
def damaged_transcript(draw):
    n = draw(st.integers(1, 25))
    good = T.growing_session(n, reads=draw(st.integers(0, n)))
    rnd = random.Random(draw(st.integers(0, 10**6)))
    lines: list[bytes] = []
    valid_keys = []
    for e in good:
        line = json.dumps(e).encode()
        if e["type"] == "assistant":
            valid_keys.append(e["message"]["id"])
            if rnd.random() < 0.3:  # an early revision, out of order: must fold into the same call
                early = json.loads(line)
                early["message"]["usage"]["output_tokens"] = 1
                lines.append(json.dumps(early).encode())
        if rnd.random() < 0.2:  # a sidechain copy
            side = T.sidechain(e)
            if "id" in side.get("message", {}):
                side["message"]["id"] = "side-" + side["message"]["id"]
            lines.append(json.dumps(side).encode())
        lines.append(line)
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(damage))
    if draw(st.booleans()):
        lines.append(b'{"type": "assistant", "x": "' + b"y" * draw(st.integers(1000, 200_000)) + b'"}')
    tail = draw(st.sampled_from([b"", b'{"type": "user", "mess']))  # an unfinished last line
    return b"\n".join(lines) + b"\n" + tail, valid_keys


def ingest(data: bytes, chunks: list[int] | None) -> list[dict]:
    engine = new_engine("/tmp/faults.jsonl", PRICES)
    splitter = LineSplitter()
    pos, i = 0, 0
    while pos < len(data):
        step = chunks[i % len(chunks)] if chunks else len(data)
        for line in splitter.feed(data[pos:pos + step]):
            engine.feed_line(line)
        pos, i = pos + step, i + 1
    engine.held_back_bytes = splitter.pending
    engine.finish()
    return engine.drain_events()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_transcript(), st.lists(st.integers(1, 5000), min_size=1, max_size=8))
def test_damage_never_crashes_and_valid_calls_are_all_measured(sample, chunks):
    data, keys = sample
    whole = ingest(data, None)
    assert [e["key"] for e in whole if e["event"] == "call"] == keys
    assert ingest(data, chunks) == whole
    assert whole[-1]["event"] == "end" and whole[-1]["skipped_lines"] >= 0


def test_fuzzer_runs_its_budget_without_a_crash(tmp_path):
    """The coverage-guided fuzz target, for a fixed budget (a longer run: fuzz/fuzz_engine.py)."""
    try:
        import atheris  # noqa: F401 - imported only to see that it is installed
    except ImportError:
        import pytest

        pytest.skip("atheris is not installed")
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "fuzz_engine.py"), "-atheris_runs=5000",
                           f"-artifact_prefix={tmp_path}/"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 5000" in proc.stderr
