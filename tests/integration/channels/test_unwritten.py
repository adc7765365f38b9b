"""Honest spend (issue 16, point 4): what Claude Code billed but never wrote as assistant entries,
booked apart from the measured calls: measured from its cost-state, else estimated per compaction."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.channels.spend import model_usage
from service.engine_setup.engines import load_prices
from tests.support import transcripts as T
from tests.support.corpus import CC, CLI_CORPORA, ROOT

SONNET = "claude-sonnet-4-5"


def report(projects: Path, home: Path) -> dict:
    env = dict(os.environ, CTXLAMP_HOME=str(home))
    out = subprocess.run([sys.executable, "-m", "service.cli", "report", "--no-service", "--no-cache", "--json",
                          "--projects", str(projects)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def cost_state(usage: dict[str, list[int]], total: float = 1.0) -> dict:
    return {"type": "cost-state", "sessionId": T.SID, "totalCostUSD": total, "modelUsage": {
        m: {"inputTokens": u[0], "cacheCreationEphemeral5mInputTokens": u[1], "cacheCreationEphemeral1hInputTokens": u[2],
            "cacheReadInputTokens": u[3], "outputTokens": u[4], "cacheCreationInputTokens": u[1] + u[2]}
        for m, u in usage.items()}}


def write(projects: Path, entries: list[dict], name: str = T.SID) -> None:
    folder = projects / "-home-user-proj"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jsonl").write_bytes(T.to_bytes(entries))


def test_model_usage_reads_the_split_or_the_plain_creation_count():
    assert model_usage({"m": {"inputTokens": 1, "cacheCreationInputTokens": 9, "cacheReadInputTokens": 3,
                              "outputTokens": 4}}) == {"m": [1, 9, 0, 3, 4]}
    assert model_usage({"m": {"inputTokens": "x"}, 3: {}}) == {}
    assert model_usage(None) == {}


def test_the_difference_to_the_cost_state_is_booked_as_measured(tmp_path):
    calls = [T.call("m1", 10, inn=3, cw5=5000, cr=20000, out=400), T.call("m2", 20, inn=3, cw5=2000, cr=25000, out=300)]
    # Claude Code counted one more request it never wrote: exactly m2's tokens again
    usage = {SONNET: [6 + 3, 7000 + 2000, 0, 45000 + 25000, 700 + 300]}
    write(tmp_path / "p", [T.prompt("go", 0), *calls, cost_state(usage)])
    doc = report(tmp_path / "p", tmp_path / "home")
    price, _ = load_prices().lookup(SONNET)
    m2_usd = 3 * price.p_in + 2000 * price.p_w5 + 25000 * price.p_r + 300 * price.p_out
    booked = doc["spend"]["unwritten"]["measured"]
    assert booked["label"] == "measured" and booked["what"] == "requests Claude Code made but did not write"
    assert booked["usd"] == pytest.approx(m2_usd, abs=1e-6)
    row = booked["by_session"][T.SID]
    assert row["day"] == "2026-11-01" and row["would_be_negative_usd"] is None
    assert booked["by_day"] == {"2026-11-01": pytest.approx(m2_usd, abs=1e-6)}
    assert doc["spend"]["total_usd"] == pytest.approx(doc["spend"]["main_usd"])  # measured calls unchanged
    assert doc["spend"]["unwritten"]["estimated"]["compactions"] == 0  # known: nothing estimated


def test_never_negative_and_says_so(tmp_path):
    calls = [T.call("m1", 10, inn=3, cw5=5000, cr=20000, out=400)]
    write(tmp_path / "p", [T.prompt("go", 0), *calls, cost_state({SONNET: [3, 1000, 0, 20000, 400]})])
    row = report(tmp_path / "p", tmp_path / "home")["spend"]["unwritten"]["measured"]["by_session"][T.SID]
    assert row["usd"] == 0 and row["would_be_negative_usd"] < 0


def test_compactions_without_a_cost_state_are_estimated_as_a_range(tmp_path):
    entries = [T.prompt("go", 0), T.call("m1", 10, inn=3, cw5=90000, cr=10000, out=400),
               T.compact(20, pre=100_000, post=20_000), T.summary_user(21),
               T.call("m2", 30, inn=3, cw5=20000, cr=0, out=100)]
    write(tmp_path / "p", entries)
    est = report(tmp_path / "p", tmp_path / "home")["spend"]["unwritten"]["estimated"]
    price, _ = load_prices().lookup(SONNET)
    low = 100_000 * price.p_r + 20_000 * price.p_out
    high = 100_000 * price.p_w5 + 20_000 * price.p_out
    assert est["label"] == "estimated" and est["compactions"] == 1
    assert est["low_usd"] == pytest.approx(low, abs=1e-6) and est["high_usd"] == pytest.approx(high, abs=1e-6)
    assert est["by_session"][T.SID]["compactions"] == 1


def test_the_report_table_shows_them_apart(tmp_path):
    write(tmp_path / "p", [T.prompt("go", 0), T.call("m1", 10, cw5=5000, out=10), T.compact(20), T.summary_user(21)])
    env = dict(os.environ, CTXLAMP_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-m", "service.cli", "report", "--no-service", "--no-cache",
                          "--projects", str(tmp_path / "p")], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert "not in the billed figure: 1 compaction Claude Code gave no cost for (estimated): $0.33 .. $0.68" in out.stdout
    billed = next(line for line in out.stdout.splitlines() if line.startswith("Billed:"))
    assert billed.startswith("Billed: $0.02 = written calls $0.02 + not written down $")  # the glossary's words


FIXTURES = CC


@pytest.mark.parametrize("version", sorted(CLI_CORPORA))
@pytest.mark.parametrize("scenario", ["long-session", "subagent-and-compact", "clear", "tools-and-edits"])
def test_on_what_the_real_cli_wrote_booking_leaves_nothing_of_its_own_figure(tmp_path, scenario, version):
    """Checked live: the transcripts each pinned real CLI wrote through the fake API. After booking what it
    did not write, ours + booked equals its totalCostUSD (same prices for these models)."""
    doc = report(CLI_CORPORA[version] / scenario / "projects", tmp_path / "home")
    dq, booked = doc["data_quality"], doc["spend"]["unwritten"]["measured"]
    assert dq["cost_state_sessions"] and abs(dq["cost_state_remaining_usd"]) < 1e-5
    compacted = scenario in ("long-session", "subagent-and-compact")
    assert (booked["usd"] > 0.05) if compacted else booked["usd"] == 0


@pytest.mark.parametrize("scenario", ["long-session", "subagent-and-compact"])
def test_without_its_cost_state_the_estimate_brackets_what_was_measured(tmp_path, scenario):
    measured = report(FIXTURES / scenario / "projects", tmp_path / "h1")["spend"]["unwritten"]["measured"]["usd"]
    bare = tmp_path / "projects"
    for src in (FIXTURES / scenario / "projects").rglob("*.jsonl"):
        dst = bare / src.relative_to(FIXTURES / scenario / "projects")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(b"".join(line for line in src.read_bytes().splitlines(True) if b'"type":"cost-state"' not in line))
    est = report(bare, tmp_path / "h2")["spend"]["unwritten"]["estimated"]
    assert est["compactions"] >= 1 and est["low_usd"] <= measured <= est["high_usd"]


# Sonnet 4.5's list prices in USD per million tokens (Anthropic's pricing page), typed in by hand so the
# billed figure is checked against arithmetic that shares nothing with ctxlamp's price code.
SONNET_45_PER_MTOK = {"input_tokens": 3.0, "cache_creation_5m": 3.75, "cache_creation_1h": 6.0,
                      "cache_read_input_tokens": 0.30, "output_tokens": 15.0}


def api_log_usd(scenario: str) -> float:
    """What the fake API billed: every request in its own log (api.jsonl), priced by hand."""
    total = 0.0
    for line in (FIXTURES / scenario / "api.jsonl").read_text().splitlines():
        req = json.loads(line)
        assert req["model"] == SONNET  # the hand prices above are this model's
        u = req["usage"]
        split = u.get("cache_creation") or {}
        cw5 = split.get("ephemeral_5m_input_tokens", u["cache_creation_input_tokens"])
        cw1h = split.get("ephemeral_1h_input_tokens", 0)
        r = SONNET_45_PER_MTOK
        total += (u["input_tokens"] * r["input_tokens"] + cw5 * r["cache_creation_5m"]
                  + cw1h * r["cache_creation_1h"] + u["cache_read_input_tokens"] * r["cache_read_input_tokens"]
                  + u["output_tokens"] * r["output_tokens"]) / 1e6
    return total


@pytest.mark.parametrize("scenario", ["long-session", "subagent-and-compact", "clear", "tools-and-edits"])
def test_the_billed_figure_equals_what_the_fake_api_billed(tmp_path, scenario):
    """Issue 26: the headline is what the API billed, compaction requests included, and its parts add up."""
    doc = report(FIXTURES / scenario / "projects", tmp_path / "home")
    spend = doc["spend"]
    api_usd = api_log_usd(scenario)
    assert spend["billed_usd"] == pytest.approx(api_usd, abs=1e-5)
    billed = spend["billed"]
    assert billed["written_usd"] == pytest.approx(spend["total_usd"])  # the old field keeps its meaning
    assert billed["usd"] == pytest.approx(billed["written_usd"] + billed["unwritten_measured_usd"], abs=1e-8)
    assert sum(billed["by_day"].values()) == pytest.approx(billed["usd"], abs=1e-6)
    assert sum(billed["by_session"].values()) == pytest.approx(billed["usd"], abs=1e-6)
    if scenario in ("long-session", "subagent-and-compact"):  # compactions: the written calls alone fall short
        assert spend["total_usd"] < api_usd - 0.05
    else:
        assert spend["total_usd"] == pytest.approx(api_usd, abs=1e-5)


# ---- issue 26: the data quality explains a cost-state difference by what it can show --------------------

def explained(doc: dict) -> dict:
    return {e["session_id"]: e for e in doc["data_quality"]["cost_state_explained"]}


def test_after_clear_the_figures_are_equal_and_no_prices_are_blamed(tmp_path):
    doc = report(FIXTURES / "clear" / "projects", tmp_path / "home")
    rows = explained(doc)
    assert len(rows) == 2 and all(e["kind"] == "equal" and e["prices_agree"] for e in rows.values())
    env = dict(os.environ, CTXLAMP_HOME=str(tmp_path / "h2"))
    text = subprocess.run([sys.executable, "-m", "service.cli", "report", "--no-service", "--no-cache", "--projects",
                           str(FIXTURES / "clear" / "projects")], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True).stdout
    assert "left after booking what it did not write down: $+0.0000" in text and "prices" not in text


def test_a_cost_state_that_counts_fewer_calls_is_said_so_not_blamed_on_prices(tmp_path):
    """Its count restarted (a /clear in the same file, as older versions wrote it): it covers the last call
    only, so ctxlamp's figure is higher, and the difference is calls, shown by their tokens."""
    first = T.call("m1", 10, inn=3, cw5=5000, cr=20000, out=400)
    second = T.call("m2", 20, inn=3, cw5=2000, cr=25000, out=300)
    price, _ = load_prices().lookup(SONNET)
    second_usd = 3 * price.p_in + 2000 * price.p_w5 + 25000 * price.p_r + 300 * price.p_out
    write(tmp_path / "p", [T.prompt("go", 0), first, T.prompt("/clear then more", 15), second,
                           cost_state({SONNET: [3, 2000, 0, 25000, 300]}, total=second_usd)])
    doc = report(tmp_path / "p", tmp_path / "home")
    row = explained(doc)[T.SID]
    assert row["kind"] == "fewer_calls" and row["covered_calls"] == 1 and row["prices_agree"]
    assert row["from"] == T.ts(20) and "not prices" in row["text"]
    assert doc["data_quality"]["cost_state_remaining_usd"] < 0


def test_prices_are_blamed_only_when_the_tokens_agree_and_the_money_does_not(tmp_path):
    calls = [T.call("m1", 10, inn=3, cw5=5000, cr=20000, out=400)]
    write(tmp_path / "p", [T.prompt("go", 0), *calls, cost_state({SONNET: [3, 5000, 0, 20000, 400]}, total=1.0)])
    row = explained(report(tmp_path / "p", tmp_path / "home"))[T.SID]
    price, _ = load_prices().lookup(SONNET)
    ours = 3 * price.p_in + 5000 * price.p_w5 + 20000 * price.p_r + 400 * price.p_out
    assert row["kind"] == "prices" and not row["prices_agree"]
    assert row["claude_code_tokens_at_our_prices_usd"] == pytest.approx(ours, abs=1e-6)
    assert f"cost ${ours:.4f}, it says $1.0000" in row["text"]
