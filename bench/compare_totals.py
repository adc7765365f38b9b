"""Per-day tokens and USD: ctxlamp against ccusage, each difference explained from data.

The differences have three known causes, and each is measured here rather than asserted:
- dedup rule: Claude Code writes one line per content block of a response, all
  with the same message.id and requestId; output_tokens grows along them.
  ctxlamp keeps the revision with the highest total (keep-largest); ccusage keeps
  the first line of each `message.id:requestId` (keep-first). Recounting the raw
  lines with keep-first must reproduce ccusage's tokens exactly;
- sidechains (subagent files, `isSidechain: true`): counted by both, so their
  share is reported but should explain nothing;
- prices: the keep-first tokens priced with ctxlamp's table, minus ccusage's
  cost, is the price difference; the part of it from 1-hour cache writes
  (ccusage prices every cache write at the 5-minute rate) is shown apart.

    python bench/compare_totals.py --corpus DIR --ccusage ccusage.json --ctxlamp report.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOKENS = ("input", "output", "cache_creation", "cache_read")


def read_calls(projects: Path) -> list[list[dict]]:
    """Every assistant line with a usage, per file, in file order (an independent reader)."""
    out = []
    for path in sorted(projects.rglob("*.jsonl")):
        sub = path.name.startswith("agent-") or "subagents" in path.parts
        rows = []
        for line in path.read_bytes().split(b"\n"):
            if b'"usage"' not in line:
                continue
            try:
                e = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            m = e.get("message") if isinstance(e, dict) else None
            if e.get("type") != "assistant" or not isinstance(m, dict) or not isinstance(m.get("usage"), dict):
                continue
            u = m["usage"]
            cw = int(u.get("cache_creation_input_tokens") or 0)
            cc = u.get("cache_creation") if isinstance(u.get("cache_creation"), dict) else {}
            w1h = int(cc.get("ephemeral_1h_input_tokens") or 0)
            rows.append({"mid": m.get("id"), "rid": e.get("requestId"), "ts": e.get("timestamp"),
                         "model": m.get("model"), "side": sub or e.get("isSidechain") is True,
                         "input": int(u.get("input_tokens") or 0), "output": int(u.get("output_tokens") or 0),
                         "cache_creation": cw, "cache_read": int(u.get("cache_read_input_tokens") or 0),
                         "w1h": min(w1h, cw)})
        if rows:
            out.append(rows)
    return out


def _mid_or_rid(r: dict) -> str | None:
    return r["mid"] or r["rid"] or None


def _mid_and_rid(r: dict) -> str | None:
    return f"{r['mid']}:{r['rid']}" if r["mid"] and r["rid"] else None


def _total(r: dict) -> int:
    return sum(r[t] for t in TOKENS)


def dedup(files: list[list[dict]], key_of, keep: str, skip_synthetic: bool = False) -> list[dict]:
    """One record per key (records without a key always count); keep = first | last | largest."""
    kept: dict = {}
    for rows in files:
        for r in rows:
            if skip_synthetic and r["model"] == "<synthetic>":
                continue
            key = key_of(r)
            if key is None:
                kept[id(r)] = r
                continue
            prev = kept.get(key)
            if prev is None or keep == "last" or (keep == "largest" and _total(r) > _total(prev)):
                kept[key] = r
    return list(kept.values())


# (label, key, keep); the first is ctxlamp's rule (service/channels/spend.py)
RULES = (
    ("ctxlamp: message.id (else requestId), keep-largest", _mid_or_rid, "largest"),
    ("message.id:requestId (both needed), keep-first", _mid_and_rid, "first"),
    ("message.id:requestId (both needed), keep-largest", _mid_and_rid, "largest"),
    ("message.id:requestId (both needed), keep-last", _mid_and_rid, "last"),
    ("no dedup", lambda r: None, "first"),
)


def per_day(records: list[dict], price_of) -> dict[str, dict]:
    from service.channels.spend import call_cost

    days: dict[str, dict] = defaultdict(lambda: {**{t: 0 for t in TOKENS}, "usd": 0.0, "usd_1h_premium": 0.0,
                                                 "side_usd": 0.0, "calls": 0})
    for r in records:
        day = (r["ts"] or "")[:10]
        d = days[day]
        for t in TOKENS:
            d[t] += r[t]
        d["calls"] += 1
        price = price_of(r["model"])
        if price is None:
            continue
        usd = call_cost(price, r["input"], r["cache_creation"] - r["w1h"], r["w1h"], r["cache_read"], r["output"])
        d["usd"] += usd
        d["usd_1h_premium"] += r["w1h"] * (price.p_w1h - price.p_w5) if r["w1h"] else 0.0
        if r["side"]:
            d["side_usd"] += usd
    return dict(days)


def ccusage_days(doc: dict) -> dict[str, dict]:
    return {d["date"]: {"input": d["inputTokens"], "output": d["outputTokens"],
                        "cache_creation": d["cacheCreationTokens"], "cache_read": d["cacheReadTokens"],
                        "usd": d["totalCost"]} for d in doc.get("daily", [])}


def _same_tokens(a: dict | None, b: dict | None) -> bool:
    return all((a or {}).get(t, 0) == (b or {}).get(t, 0) for t in TOKENS)


def monitor_totals(doc: dict) -> dict:
    """claude-monitor's days (bench/claude_monitor_daily.py) summed."""
    days = doc.get("daily", [])
    return {"input": sum(d["input_tokens"] for d in days), "output": sum(d["output_tokens"] for d in days),
            "cache_creation": sum(d["cache_creation_tokens"] for d in days),
            "cache_read": sum(d["cache_read_tokens"] for d in days), "usd": sum(d["cost_usd"] for d in days)}


def compare(projects: Path, ccusage_doc: dict, report_doc: dict, monitor_doc: dict | None = None) -> dict:
    """Recount the corpus under each dedup rule; find the one that reproduces ccusage; split the difference."""
    from service.report.build import load_prices

    table = load_prices()
    memo: dict = {}

    def price_of(model):
        if model not in memo:
            memo[model] = table.lookup(model)[0] if isinstance(model, str) and model else None
        return memo[model]

    files = read_calls(projects)
    cc = ccusage_days(ccusage_doc)
    rep = report_doc["spend"]["by_day"]
    rules = []
    for label, key_of, keep in RULES:
        days = per_day(dedup(files, key_of, keep, skip_synthetic=key_of is _mid_or_rid), price_of)
        all_days = sorted(set(days) | set(cc))
        rules.append({
            "rule": label, "days": days,
            "tokens": {t: sum(d[t] for d in days.values()) for t in TOKENS},
            "usd": sum(d["usd"] for d in days.values()),
            "usd_1h_premium": sum(d["usd_1h_premium"] for d in days.values()),
            "side_usd": sum(d["side_usd"] for d in days.values()),
            "tokens_match_ccusage": all(_same_tokens(days.get(d), cc.get(d)) for d in all_days),
            "usd_match_ccusage": all(abs(days.get(d, {}).get("usd", 0) - cc.get(d, {}).get("usd", 0))
                                     <= 1e-6 * max(1.0, cc.get(d, {}).get("usd", 0)) for d in all_days),
        })
    seen_mid: set[str] = set()
    repeats_no_rid = 0  # lines of an already seen message.id that carry no requestId: only ctxlamp folds them
    for rows in files:
        for r in rows:
            if r["mid"] and not r["rid"] and r["model"] != "<synthetic>":
                repeats_no_rid += r["mid"] in seen_mid
                seen_mid.add(r["mid"])
    ours = rules[0]
    match = next((r for r in rules if r["tokens_match_ccusage"]), None)
    cc_usd = sum(d["usd"] for d in cc.values())
    rep_usd = sum(rep.values())
    day_rows = []
    for day in sorted(set(cc) | set(rep) | set(ours["days"])):
        o, c = ours["days"].get(day), cc.get(day)
        if _same_tokens(o, c) and abs(rep.get(day, 0) - (c or {}).get("usd", 0)) < 0.005:
            continue
        day_rows.append({"day": day, "ctxlamp_usd": rep.get(day, 0.0), "ccusage_usd": (c or {}).get("usd", 0.0),
                         "ctxlamp_tokens": {t: (o or {}).get(t, 0) for t in TOKENS},
                         "ccusage_tokens": {t: (c or {}).get(t, 0) for t in TOKENS}})
    return {
        "ctxlamp_usd": rep_usd, "ccusage_usd": cc_usd,
        "ccusage_tokens": {t: sum(d[t] for d in cc.values()) for t in TOKENS},
        "rules": [{k: v for k, v in r.items() if k != "days"} for r in rules],
        "ccusage_rule": match["rule"] if match else None,
        "dedup_usd": ours["usd"] - match["usd"] if match else None,
        "price_usd": match["usd"] - cc_usd if match else None,
        "sidechain_usd": ours["side_usd"], "repeats_without_request_id": repeats_no_rid,
        "recount_matches_report": abs(ours["usd"] - rep_usd) <= 1e-4 * max(1.0, rep_usd) and all(
            abs(ours["days"].get(d, {}).get("usd", 0) - v) <= 1e-4 * max(1.0, v) for d, v in rep.items()),
        "days": len(set(cc) | set(rep)), "differing_days": day_rows,
        "monitor": _explain_monitor(monitor_totals(monitor_doc), rules) if monitor_doc else None,
    }


def _explain_monitor(mon: dict, rules: list[dict]) -> dict:
    """claude-monitor's totals: which counting rule gives its tokens, and what its prices leave over."""
    match = next((r for r in rules if all(r["tokens"][t] == mon[t] for t in TOKENS)), None)
    if match:
        mon["rule"] = match["rule"]
        mon["price_usd"] = match["usd"] - mon["usd"]  # ctxlamp prices minus its prices, same tokens
        mon["price_1h_write_usd"] = match["usd_1h_premium"]
    return mon


def format_report(res: dict) -> str:
    lines = ["| counting rule | input | output | cache writes | cache reads | USD (ctxlamp prices) | = ccusage tokens |",
             "|---|---:|---:|---:|---:|---:|:---:|"]
    for r in res["rules"]:
        v = r["tokens"]
        lines.append(f"| {r['rule']} | {v['input']:,} | {v['output']:,} | {v['cache_creation']:,} | "
                     f"{v['cache_read']:,} | {r['usd']:,.2f} | {'yes' if r['tokens_match_ccusage'] else 'no'} |")
    v = res["ccusage_tokens"]
    lines.append(f"| ccusage's own output | {v['input']:,} | {v['output']:,} | {v['cache_creation']:,} | "
                 f"{v['cache_read']:,} | {res['ccusage_usd']:,.2f} (its prices) | |")
    mon = res.get("monitor")
    if mon:
        lines.append(f"| claude-monitor's own output | {mon['input']:,} | {mon['output']:,} | {mon['cache_creation']:,} | "
                     f"{mon['cache_read']:,} | {mon['usd']:,.2f} (its prices) | |")
    diff = res["ctxlamp_usd"] - res["ccusage_usd"]
    lines += ["", f"- ctxlamp report ${res['ctxlamp_usd']:,.2f} vs ccusage ${res['ccusage_usd']:,.2f}: "
                  f"{diff:+,.2f} ({100 * diff / res['ccusage_usd'] if res['ccusage_usd'] else 0:+.2f}%); "
                  f"{len(res['differing_days'])} of {res['days']} days differ."]
    if res["ccusage_rule"]:
        lines += [f"- ccusage's tokens are reproduced exactly, on every day, by the rule "
                  f"\"{res['ccusage_rule']}\" (recounted from the raw lines).",
                  f"- dedup rule: ctxlamp's rule minus that rule, both at ctxlamp prices: ${res['dedup_usd']:+,.2f}; "
                  f"{res['repeats_without_request_id']:,} lines repeat a message.id without a requestId: ctxlamp "
                  "folds them into one call, ccusage (which needs both ids) counts each.",
                  f"- prices: that rule's tokens at ctxlamp prices minus ccusage's cost: ${res['price_usd']:+,.4f}."]
    else:
        lines.append("- no counting rule tried here reproduces ccusage's tokens exactly (see the table).")
    if mon and mon.get("rule"):
        lines.append(f"- claude-monitor: its tokens are those of \"{mon['rule']}\" (totals); on the same tokens "
                     f"ctxlamp's prices give ${mon['price_usd']:+,.2f} more, of which 1-hour cache writes at the "
                     f"1h rate (it prices every cache write at the 5-minute rate): ${mon['price_1h_write_usd']:+,.2f}.")
    lines += [f"- sidechains (subagent calls) in ctxlamp's total: ${res['sidechain_usd']:,.2f}; "
              "both tools count them, so they explain none of the difference.",
              f"- check: the independent recount with ctxlamp's rule equals the report's by_day: "
              f"{'yes' if res['recount_matches_report'] else 'NO'}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--ccusage", type=Path, required=True, help="output of ccusage claude daily --json --offline")
    ap.add_argument("--ctxlamp", type=Path, required=True, help="output of ctxlamp report --json")
    args = ap.parse_args(argv)
    res = compare(args.corpus / ".claude" / "projects", json.loads(args.ccusage.read_text()),
                  json.loads(args.ctxlamp.read_text()))
    print(format_report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
