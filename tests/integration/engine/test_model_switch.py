"""A /model switch inside a session (issue 19): every call priced and valued at its own model.

The switch is not a reset: B, turns, wallet and reminders carry on. From the
first call on the new model, the restart price, p_w, cRatio, the sweet spot and
the lamp are the new model's; that call writes its prompt anew into the new
model's cache, and its rent is read like any cache miss (docs/decisions.md).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests.support.corpus import ROOT, scenario_session
from tests.support.engine_runs import calls_of, run

SONNET, OPUS, OPUS55 = "claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-5-5"


# ---- the property: a segment's bill is the sum of its calls, each priced alone at its own model ----


# ---- the reading of a switch ----------------------------------------------------------------------


# ---- stored profiles --------------------------------------------------------------------------------


# ---- golden: a session of our own, written by the real CLI against our fake API ----------------------

SWITCH_FIXTURE = scenario_session("model-switch").parents[2]


def official_bill(model: str, usage: dict) -> tuple[float, float]:
    """USD of one request from resources/prices.json's published rates (per million), by hand."""
    table = json.loads((ROOT / "resources" / "prices.json").read_text())["models"]
    rates = table[model]
    cc = usage.get("cache_creation") or {}
    w1h = cc.get("ephemeral_1h_input_tokens", 0)
    w5 = usage["cache_creation_input_tokens"] - w1h
    prompt = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    lc = rates.get("long_context")
    if lc and prompt > lc["threshold_tokens"]:
        rates = lc
    bill_in = (rates["input"] * usage["input_tokens"] + rates["cache_write_5m"] * w5
               + rates["cache_write_1h"] * w1h + rates["cache_read"] * usage["cache_read_input_tokens"]) / 1e6
    return bill_in, rates["output"] * usage["output_tokens"] / 1e6


def test_golden_a_real_cli_session_switched_each_way_is_billed_at_each_calls_model():
    """sonnet-4-5 -> opus-4-5 -> sonnet-4-5: the segment's bill is what the fake API's reported usage costs
    at the official prices, request by request, and each call line names the model that answered it."""
    transcript = scenario_session("model-switch")
    api = {r["id"]: r for r in map(json.loads, (SWITCH_FIXTURE / "api.jsonl").read_text().splitlines())}
    keys = []  # main-chain calls of the transcript, in order (only their ids; usage and model come from the API)
    for entry in map(json.loads, transcript.read_text().splitlines()):
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        if entry.get("type") == "assistant" and not entry.get("isSidechain") and "usage" in msg \
                and msg["id"] not in keys:
            keys.append(msg["id"])
    assert [api[k]["model"] for k in keys] == [SONNET] * 3 + [OPUS] * 3 + [SONNET] * 2
    bills = [official_bill(api[k]["model"], api[k]["usage"]) for k in keys]

    proc = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(transcript), "--jsonl"],
                          capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    lines = calls_of(events)
    assert [c["key"] for c in lines] == keys
    assert [c["model"] for c in lines] == [api[k]["model"] for k in keys]
    assert {c["price_source"] for c in lines} == {"table"}
    (profile,) = events[-1]["segments"]
    assert math.isclose(profile["bill_in_usd"], math.fsum(b[0] for b in bills), rel_tol=1e-12)
    assert math.isclose(profile["bill_out_usd"], math.fsum(b[1] for b in bills), rel_tol=1e-12)
    for model in (SONNET, OPUS):
        (listed,) = [m for m in profile["models"] if m["model"] == model]
        mine = [b for k, b in zip(keys, bills) if api[k]["model"] == model]
        assert listed["calls"] == len(mine)
        assert math.isclose(listed["bill_in_usd"], math.fsum(b[0] for b in mine), rel_tol=1e-12)
        assert math.isclose(listed["bill_out_usd"], math.fsum(b[1] for b in mine), rel_tol=1e-12)
    # at each switch: the new model's prices from that call on; the call's rent is read at its own bill
    switches = [i for i in range(1, len(keys)) if api[keys[i]]["model"] != api[keys[i - 1]]["model"]]
    assert switches == [3, 6]
    for i in switches:
        at, prev = lines[i], lines[i - 1]
        price = json.loads((ROOT / "resources" / "prices.json").read_text())["models"][at["model"]]
        assert math.isclose(at["cache"]["cold_rewrite_usd"], price["cache_write_5m"] / 1e6 * at["totalStock"])
        rho = bills[i][0] * max(0, at["totalStock"] - prev["B_default"]) / at["totalStock"]  # B0: see above
        assert math.isclose(at["bp"], rho, rel_tol=1e-12)
        assert math.isclose(at["bill_cycle_usd"] - prev["bill_cycle_usd"], (prev["bp"] + rho) / 2, rel_tol=1e-9)
        assert at["segment"] == prev["segment"] and at["turns"] == prev["turns"] + 1


def test_the_switched_segments_profile_agrees_with_ctxlamp_report(tmp_path):
    """The issue's symptom: History (the segment profiles) and `ctxlamp report` disagreed on one session."""
    transcript = scenario_session("model-switch")
    env = {**os.environ, "CTXLAMP_HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(transcript.parents[2])}
    report = subprocess.run([sys.executable, "-m", "service.cli", "report", "--json", "--since", "2000-01-01"],
                            capture_output=True, cwd=ROOT, env=env, timeout=120)
    assert report.returncode == 0, report.stderr
    spend = json.loads(report.stdout)["spend"]
    _, events = run([json.loads(line) for line in transcript.read_text().splitlines()])
    (profile,) = events[-1]["segments"]
    assert math.isclose(spend["by_session"][transcript.stem]["usd"],
                        profile["bill_in_usd"] + profile["bill_out_usd"], rel_tol=1e-12)
    assert {m["model"]: m["bill_in_usd"] + m["bill_out_usd"] for m in profile["models"]} == \
        pytest.approx(spend["by_model"], rel=1e-12)
