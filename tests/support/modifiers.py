"""Sessions with fast-mode and US-only calls, made from a transcript the real CLI wrote.

The CLI pinned for the fixtures cannot be sent to fast mode or US-only inference by the fake API's
account, so these sessions are the real 2.1.332 model-switch transcript (`tests/fixtures/`) with only
the fields that say which model, speed and geography served each call rewritten: its token counts,
its tool results and its cache behaviour stay as the CLI wrote them. That session switches model
twice (Sonnet 4.5, Opus 4.5, Sonnet 4.5) and each switch wrote the prompt into the cache anew, which
is also what a switch of speed does (the cache is per speed): mapping the middle stretch to fast
mode gives a real speed switch.

The calls' usage, as the CLI wrote it (input, 5-minute cache writes, cache reads, output; no 1-hour
writes, no plain input):

    1  0  31602      0  36        5  0    110  32102  59
    2  0    128  31602  35        6  0    150  32212  13
    3  0    110  31730  12        7  0    787  31840  35
    4  0  32102      0  35        8  0     85  32627  10
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.corpus import CLI_CORPORA

SOURCE = next((CLI_CORPORA["2.1.332"] / "model-switch" / "projects").rglob("*.jsonl"))
FIRST, MIDDLE = "claude-sonnet-4-5", "claude-opus-4-5"  # the models the CLI used: calls 1-3 and 7-8, calls 4-6

# The sums of the calls' usage above, by hand.
ALL = {"cw5": 31602 + 128 + 110 + 32102 + 110 + 150 + 787 + 85, "cr": 31602 + 31730 + 32102 + 32212 + 31840 + 32627,
       "out": 36 + 35 + 12 + 35 + 59 + 13 + 35 + 10}
MIDDLE_CALLS = {"cw5": 32102 + 110 + 150, "cr": 32102 + 32212, "out": 35 + 59 + 13}


def derive(dest: Path, usage: dict[str, Any] | None = None, *, models: dict[str, str] | None = None,
           middle: dict[str, Any] | None = None, day: str | None = None) -> Path:
    """Write the session to `dest` (a projects folder) with each call's model mapped by `models`, `usage`
    fields laid on every call's usage (None removes a field) and `middle` on calls 4-6 only; `day`
    (YYYY-MM-DD) moves every time to that day (the hours stay). Returns the transcript's path."""
    out = dest / "-tmp-ctxlamp-fixture-demo-project" / SOURCE.name
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for raw in SOURCE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        if day is not None and isinstance(entry.get("timestamp"), str):
            entry["timestamp"] = day + entry["timestamp"][10:]
        msg = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(msg, dict) and isinstance(msg.get("usage"), dict):
            was = msg.get("model")
            for extra in (usage, middle if was == MIDDLE else None):
                for k, v in (extra or {}).items():
                    if v is None:
                        msg["usage"].pop(k, None)
                    else:
                        msg["usage"][k] = v
            msg["model"] = (models or {}).get(was, was)
        lines.append(json.dumps(entry, separators=(",", ":")))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def usd(rates: dict[str, float], calls: dict[str, int] = ALL) -> float:
    """USD of calls at per-million rates, by hand (these calls have 5-minute writes, reads and output only)."""
    return (calls["cw5"] * rates["cache_write_5m"] + calls["cr"] * rates["cache_read"]
            + calls["out"] * rates["output"]) / 1e6
