"""Measure how the real Claude Code CLI prices usage, model by model, into tests/fixtures/claude-code-<v>-prices.tsv.

    python -m tests.fakeapi.measure_prices [MODEL ...]    (default: every model of resources/prices.json)

For each model and each usage category, one `claude -p` run gets one answer from the fake API that
reports 1,000,000 tokens of that category and nothing else (300,000 plain input tokens for the
input_300k column, where a long-context premium would show); the cost the CLI writes into its result
(the costUSD of its one modelUsage entry, under whichever model it sent: it replaces some retired ids
with a newer model's) is its price. Models the CLI does not know (its cost-state entry says
hasUnknownModelCost) get no row.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from resources import resource_path
from tests.fakeapi.make_fixtures import FIXTURES, PINNED, cli_version
from tests.fakeapi.scenario import claude_binary, run_scenario

MILLION = 1_000_000
COLUMNS = {  # column -> the usage the fake API reports for it
    "input": {"input_tokens": MILLION},
    "output": {"output_tokens": MILLION},
    "cache_read": {"cache_read_input_tokens": MILLION},
    "cache_write_5m": {"ephemeral_5m_input_tokens": MILLION},
    "cache_write_1h": {"ephemeral_1h_input_tokens": MILLION},
    "input_300k": {"input_tokens": 300_000},
}
HEADER = ["# USD per million tokens, as Claude Code {v} prices them (modelUsage.costUSD of its result).",
          "# Measured by tests/fakeapi/measure_prices.py: one run per cell, the fake API reporting 1,000,000",
          "# tokens of one category; input_300k is the cost of 300,000 plain input tokens (a long-context premium",
          "# would show here)."]


def measure_model(model: str, binary: str) -> dict[str, float] | None:
    """The CLI's price of each column for `model`, or None when it does not price the model."""
    row = {}
    with tempfile.TemporaryDirectory(prefix="ctxlamp-prices-") as scratch:
        for column, usage in COLUMNS.items():  # a fresh session each: a resumed one carries the cost along
            script = {"conversations": [{"match": "PRICE", "steps": [{"text": "ok", "usage": usage}]}]}
            outcome = run_scenario({"model": model, "script": script, "runs": [{"prompt": f"PRICE {column}"}]},
                                   Path(scratch) / "out", claude_bin=binary)
            (result,) = outcome.results
            (used,) = (result.get("modelUsage") or {}).values()
            if result.get("is_error") or unknown_to_the_cli(outcome.projects):
                return None
            row[column] = used["costUSD"]  # of a million tokens: USD per MTok (input_300k: USD for 300,000)
    return row


def unknown_to_the_cli(projects: Path) -> bool:
    for path in projects.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") == "cost-state" and entry.get("hasUnknownModelCost"):
                return True
    return False


def _number(x: float) -> str:
    return f"{x:.10g}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    args = parser.parse_args(argv)
    binary = claude_binary()
    version = cli_version(binary)
    if version != PINNED:
        print(f"warning: the CLI is {version}, the fixtures are pinned to {PINNED}", file=sys.stderr)
    models = args.models or list(json.loads(resource_path("prices.json").read_text())["models"])
    lines = [h.format(v=version) for h in HEADER] + ["\t".join(["model", *COLUMNS])]
    for model in models:
        row = measure_model(model, binary)
        print(f"{model}: {row or 'not priced by the CLI'}", file=sys.stderr)
        if row:
            lines.append("\t".join([model, *(_number(row[c]) for c in COLUMNS)]))
    out = FIXTURES / f"claude-code-{version}-prices.tsv"
    out.write_text("\n".join(lines) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
