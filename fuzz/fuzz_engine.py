"""Coverage-guided fuzzing of the transcript reader and the engine (atheris).

Any input bytes, split at any point, must be read without an exception other
than the engine's own Malformed (which feed_line absorbs). A crash is a defect.

    .venv/bin/python fuzz/fuzz_engine.py -atheris_runs=20000     # fixed budget (CI)
    .venv/bin/python fuzz/fuzz_engine.py -max_total_time=600      # a longer session
"""
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, as bench/ does

with atheris.instrument_imports():
    from service.engine import LineSplitter
    from service.engine_setup.engines import load_prices, new_engine

PRICES = load_prices()
SEED_LINES = [
    b'{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","usage":{"input_tokens":3,'
    b'"cache_creation_input_tokens":2000,"cache_read_input_tokens":100,"output_tokens":5},"content":['
    b'{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/a.py"}}]},"cwd":"/p",'
    b'"timestamp":"2026-01-01T00:00:00Z"}',
    b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x = 1"}]}}',
    b'{"type":"system","subtype":"compact_boundary","compactMetadata":{"preTokens":5}}',
    b'{"type":"user","message":{"content":"hello"}}',
]


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    engine = new_engine("/fuzz.jsonl", PRICES)
    splitter = LineSplitter()
    pieces = [SEED_LINES[fdp.ConsumeIntInRange(0, len(SEED_LINES) - 1)] + b"\n" for _ in range(fdp.ConsumeIntInRange(0, 4))]
    pieces.append(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4096)))
    pieces.append(b"\n" + SEED_LINES[0].replace(b'"m1"', b'"m2"') + b"\n")
    blob = b"".join(pieces)
    pos = 0
    while pos < len(blob):
        step = fdp.ConsumeIntInRange(1, 512) if fdp.remaining_bytes() else len(blob)
        for line in splitter.feed(blob[pos:pos + step]):
            engine.feed_line(line)
        pos += step
    engine.snapshot()
    engine.finish()
    events = engine.drain_events()
    assert events[-1]["event"] == "end"
    assert events[-1]["status"]["calls"] >= 1  # the valid call appended last is always measured


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
