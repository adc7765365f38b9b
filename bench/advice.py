"""How much the priced advice (docs/measurement.md section 15) would have saved, against hindsight.

Replays each main transcript with the engine (the call lines of `ctxlamp replay --jsonl`) and, per
segment, prices every single move in hindsight from the calls that really came after it:

- a restart after call k saves `(S_k − B0_k)·Σ_{j>k} p_r(j) − B0_k·(p_w5_k − p_r_k)` (section 14);
- a /compact after call k saves `(S_k − C_k)·Σ_{j>k} p_r(j) − q_k` (section 15's C and q).

It prints, per segment, what following the advice would have saved (the move it names at the
first call where it names one, for each policy below) against the best single move in hindsight,
for restart and for compact, beside what the same move at the first reminder saves:

- `break-even`: the first call where the advice's move is not "continue";
- `pays twice`: the first call where the move saves at least its own price over the horizon
  (a restart's rebuild, a compaction's request and first write: the advice's `pays_twice`), where
  the lamp's words name it;
- `history, pays twice`: the same over the horizon the service would learn (the median run after a
  first reminder of the corpus's other segments, as `advice_basis` takes it; 30 without any).

And, on transcripts with real compactions, the compaction request's price the advice gave one call
before each real compaction beside what that request cost: the fake API's log (`api.jsonl` beside the
`projects/` folder: the requests the transcript does not hold), priced at the bundled rates. (The
compacted prompt's first write is a call the transcript holds; it is not in either figure.)

**The rule as a policy** (`--policy`): per corpus, what following every notice saved against the
best schedule of restarts and /compacts in hindsight (docs/measurement.md 14, misses priced), the
engine's own `restart_savings.schedule` summed (the rent notices' moves and, at every break, the
cache notice's); and, with `--people DIR`, the open choices of the notice rule (service/engine/
schedule.py's `NoticeRule`: the interval's clamp, the move a rent notice names, the move the cache
notice names at a break; and the advice's horizon) tried on every person under DIR but `--holdout
NAME`, the best on those tried on the held-out person apart.

    python bench/advice.py                   # the repo's fixtures and the demo
    python bench/advice.py --extra DIR       # and the transcripts under DIR, as a corpus of their own
    python bench/advice.py --json            # the figures as JSON
    python bench/advice.py PATH...           # these transcripts or folders
    python bench/advice.py --policy [--extra DIR]...   # capture of the schedule, per corpus
    python bench/advice.py --people DIR --holdout NAME # tune the rule on DIR's people, NAME apart
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from math import fsum
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.engine.advice import (AdviceBasis, MovePrices, advise, compacted_prompt, compaction_price,  # noqa: E402
                                   compaction_request)
from service.engine_setup.engines import load_prices, replay_file  # noqa: E402

PRICES = load_prices()
BASIS = AdviceBasis()
POLICIES = ("break-even", "pays twice", "history, pays twice")


@dataclass
class Row:
    call: int
    stock: int
    b0: float
    floor: float
    p: MovePrices
    advice: dict | None
    g: float = 0.0


@dataclass
class Segment:
    name: str
    rows: list[Row] = field(default_factory=list)
    reminder: int | None = None

    def _after(self) -> list[float]:
        """Σ p_r(j) over the calls after each position."""
        tail, out = 0.0, []
        for row in reversed(self.rows):
            out.append(tail)
            tail += row.p.p_r
        return out[::-1]

    def saving(self, move: str, i: int) -> float:
        """What `move` after the i-th call of the segment would have saved, in hindsight."""
        r, later = self.rows[i], self._after()[i]
        if move == "restart":
            return (r.stock - r.b0) * later - r.b0 * (r.p.p_w5 - r.p.p_r)
        summary, compacted = compacted_prompt(r.stock, r.floor, BASIS.compact_keep)
        return (r.stock - compacted) * later - compaction_price(r.stock, summary, compacted, r.p,
                                                                BASIS.compact_write_share)

    def best(self, move: str) -> float:
        return max([0.0] + [self.saving(move, i) for i in range(len(self.rows))])

    def run_after_reminder(self) -> int | None:
        """Calls of the segment after its first reminder's (the history's `calls_after_reminder`)."""
        for i, r in enumerate(self.rows):
            if r.call == self.reminder:
                return len(self.rows) - i - 1
        return None

    def at_reminder(self, move: str) -> float | None:
        for i, r in enumerate(self.rows):
            if r.call == self.reminder:
                return self.saving(move, i)
        return None

    def followed(self, policy: str, horizon: Callable[[int], float] | None = None) -> tuple[str, float] | None:
        """(move, saving) of following the advice at the first call where the policy lets it speak; with
        `horizon` (calls so far -> calls ahead), the advice priced again over that horizon."""
        for i, r in enumerate(self.rows):
            a = r.advice
            if horizon is not None:
                basis = replace(BASIS, horizon_calls=horizon(i + 1))
                a = dict(advise(r.stock, r.b0, r.floor, r.g, r.p, basis.bounded()))
            if not a or a["move"] == "continue":
                continue
            if policy != "break-even" and not a["pays_twice"]:
                continue
            return a["move"], self.saving(a["move"], i)
        return None


def rates(model: str, stock: int) -> MovePrices | None:
    price, _ = PRICES.lookup(model)
    if price is None:
        return None
    t = price.for_prompt(stock)
    return MovePrices(p_r=t.p_r, p_w=t.p_w5, p_w5=t.p_w5, p_out=t.p_out)


def segments_of(path: Path, label: str) -> tuple[list[Segment], list[dict]]:
    """The transcript's segments, and (predicted compaction price one call before, call) of each reset."""
    segs: dict[int, Segment] = {}
    resets: list[dict] = []
    last: dict | None = None
    for e in replay_file(path, PRICES):
        if e["event"] == "call":
            p = rates(e["model"], e["totalStock"]) if e.get("model") else None
            if p is None:
                continue
            seg = segs.setdefault(e["segment"], Segment(f"{label}#{e['segment']}"))
            seg.rows.append(Row(e["calls"], e["totalStock"], float(e["B_default"]), float(e["floor"] or 0), p,
                                e.get("advice"), float(e["g"])))
            last = e
        elif e["event"] == "reminder":
            known = segs.get(e["segment"])
            if known is not None and known.reminder is None:
                known.reminder = e["call"]
        elif e["event"] == "reset" and last is not None:
            p = rates(last["model"], last["totalStock"])
            summary, _ = compacted_prompt(last["totalStock"], last["floor"] or 0, BASIS.compact_keep)
            resets.append({"call": last["calls"], "at": e.get("at"), "preTokens": e.get("preTokens"),
                           "predicted_usd": compaction_request(last["totalStock"], summary, p,
                                                               BASIS.compact_write_share) if p else None})
    return [s for s in segs.values() if s.rows], resets


def real_compaction_costs(folder: Path) -> list[float]:
    """What each compaction request cost in the fake API's log: the logged requests the transcripts do not
    hold (their message ids), at the bundled rates, grouped by the transcript's reset order."""
    api = folder / "api.jsonl"
    if not api.exists():
        return []
    ids: set[str] = set()
    for f in folder.glob("projects/**/*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                msg = json.loads(line).get("message")
            except ValueError:
                continue
            if isinstance(msg, dict) and isinstance(msg.get("id"), str):
                ids.add(msg["id"])
    costs: list[float] = []
    previous_unwritten = False
    for line in api.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["id"] in ids:
            previous_unwritten = False
            continue
        price, _ = PRICES.lookup(r["model"])
        if price is None:
            continue
        u = r["usage"]
        cc = u.get("cache_creation") or {}
        w5 = cc.get("ephemeral_5m_input_tokens", u.get("cache_creation_input_tokens", 0))
        w1h = cc.get("ephemeral_1h_input_tokens", 0)
        prompt = u["input_tokens"] + w5 + w1h + u["cache_read_input_tokens"]
        t = price.for_prompt(prompt)
        usd = (t.p_in * u["input_tokens"] + t.p_w5 * w5 + t.p_w1h * w1h + t.p_r * u["cache_read_input_tokens"]
               + t.p_out * u["output_tokens"])
        if previous_unwritten and costs:  # one compaction can send more than one request
            costs[-1] += usd
        else:
            costs.append(usd)
        previous_unwritten = True
    return costs


def transcripts(paths: list[Path]) -> list[tuple[str, Path, Path | None]]:
    """(label, main transcript, scenario folder with api.jsonl or None) for each main transcript found."""
    out = []
    for base in paths:
        files = [base] if base.is_file() else sorted(base.rglob("*.jsonl"))
        for f in files:
            if f.name in ("api.jsonl", "results.jsonl") or f.name.startswith("agent-") or "subagents" in f.parts:
                continue
            scenario = next((p for p in f.parents if (p / "api.jsonl").exists()), None)
            label = f"{scenario.name if scenario else f.parent.name}/{f.stem[:8]}"
            out.append((label, f, scenario))
    return out


def corpus(tmp: Path, extra: list[Path]) -> dict[str, list[Path]]:
    """The default corpora: the repo's fixtures (2.1.328) and the demo's sessions; each `extra` folder
    (e.g. third-party transcripts) is one more corpus, named by the folder."""
    sys.path.insert(0, str(ROOT / "resources" / "demo"))
    from make_demo import write_sessions  # type: ignore[import-not-found]

    demo = tmp / "demo"
    write_sessions(demo)
    groups = {"fixtures (2.1.328)": [ROOT / "tests" / "fixtures" / "claude-code-2.1.328"], "demo": [demo]}
    for folder in extra:
        groups[f"{folder.parent.name}/{folder.name}"] = [folder]
    return groups


def measure(paths: list[Path]) -> dict:
    segs: list[Segment] = []
    compactions: list[dict] = []
    for label, path, scenario in transcripts(paths):
        found, resets = segments_of(path, label)
        segs += found
        if resets and scenario is not None:
            for reset, cost in zip(resets, real_compaction_costs(scenario)):
                compactions.append({"transcript": label, **reset, "real_usd": cost})
    rows = []
    runs = [s.run_after_reminder() for s in segs]
    for k, s in enumerate(segs):
        row: dict = {"segment": s.name, "calls": len(s.rows), "reminder": s.reminder}
        for move in ("restart", "compact"):
            row[f"best_{move}"] = s.best(move)
            row[f"reminder_{move}"] = s.at_reminder(move)
        others = [r for j, r in enumerate(runs) if j != k and r is not None]
        learnt = float(max(1.0, statistics.median(others))) if others else BASIS.horizon_calls

        def usual(_calls: int, h: float = learnt) -> float:
            return h

        for policy in POLICIES:
            got = s.followed(policy, usual if policy.startswith("history") else None)
            row[policy] = {"move": got[0], "saved": got[1]} if got else None
        row["best_any"] = max(row["best_restart"], row["best_compact"])
        rows.append(row)
    return {"segments": rows, "compactions": compactions, "totals": totals(rows)}


def totals(rows: list[dict]) -> dict:
    def capture(num: list[float], den: list[float]) -> float | None:
        d = fsum(den)
        return fsum(num) / d if d > 0 else None

    out: dict = {"segments": len(rows), "with_reminder": sum(1 for r in rows if r["reminder"] is not None)}
    for move in ("restart", "compact"):
        out[f"best_{move}_usd"] = fsum(r[f"best_{move}"] for r in rows)
        out[f"reminder_{move}_usd"] = fsum(r[f"reminder_{move}"] or 0.0 for r in rows)
        out[f"reminder_{move}_capture"] = capture([r[f"reminder_{move}"] or 0.0 for r in rows],
                                                  [r[f"best_{move}"] for r in rows])
    out["best_any_usd"] = fsum(r["best_any"] for r in rows)
    for policy in POLICIES:
        saved = [r[policy]["saved"] if r[policy] else 0.0 for r in rows]
        out[f"{policy}_usd"] = fsum(saved)
        out[f"{policy}_capture"] = capture(saved, [r["best_any"] for r in rows])
        for move in ("restart", "compact"):
            mine = [r[policy]["saved"] for r in rows if r[policy] and r[policy]["move"] == move]
            out[f"{policy}_{move}_segments"] = len(mine)
            out[f"{policy}_{move}_usd"] = fsum(mine)
    return out


def usd(v: float | None) -> str:
    return "–" if v is None else f"${v:,.2f}"


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.0f} %"


def show(name: str, got: dict) -> None:
    print(f"\n## {name}")
    print(f"{'segment':<34} {'calls':>5} {'rem.':>5} {'best rst':>9} {'rem rst':>9} {'best cmp':>9} {'rem cmp':>9}"
          + "".join(f" {p:>20}" for p in POLICIES))
    for r in got["segments"]:
        cells = []
        for policy in POLICIES:
            f = r[policy]
            cells.append(f"{f['move']} {usd(f['saved'])}" if f else "continue")
        print(f"{r['segment'][:34]:<34} {r['calls']:>5} {r['reminder'] or '-':>5} {usd(r['best_restart']):>9} "
              f"{usd(r['reminder_restart']):>9} {usd(r['best_compact']):>9} {usd(r['reminder_compact']):>9} "
              + "".join(f"{c:>20} " for c in cells))
    t = got["totals"]
    print(f"best single move in hindsight {usd(t['best_any_usd'])} (restart {usd(t['best_restart_usd'])}, "
          f"compact {usd(t['best_compact_usd'])})")
    print(f"first reminder: restart {usd(t['reminder_restart_usd'])} ({pct(t['reminder_restart_capture'])} of the "
          f"best restart), compact {usd(t['reminder_compact_usd'])} ({pct(t['reminder_compact_capture'])} of the "
          f"best compact)")
    for policy in POLICIES:
        print(f"advice, {policy}: {usd(t[f'{policy}_usd'])} ({pct(t[f'{policy}_capture'])} of the best move); "
              f"restart in {t[f'{policy}_restart_segments']} segments {usd(t[f'{policy}_restart_usd'])}, "
              f"compact in {t[f'{policy}_compact_segments']} {usd(t[f'{policy}_compact_usd'])}")
    for c in got["compactions"]:
        print(f"compaction after call {c['call']} of {c['transcript']}: its request predicted one call "
              f"before {usd(c['predicted_usd'])}, in the fake API's log {usd(c['real_usd'])}")


# ---- the rule as a policy: following every notice against the best schedule in hindsight -------------

SCHEDULE_KEYS = ("best_usd", "best_restarts_only_usd", "followed_usd", "restarts_followed", "restarts_best",
                 "compactions_followed", "compactions_best")


def schedules(paths: list[Path]) -> list[dict]:
    """Every segment's `restart_savings.schedule`, as the engine's replay closes it."""
    out = []
    for label, path, _ in transcripts(paths):
        for e in replay_file(path, PRICES):
            if e["event"] == "end":
                out += [{"segment": f"{label}#{p['segment']}", **p["restart_savings"]["schedule"]}
                        for p in e["segments"] if (p.get("restart_savings") or {}).get("schedule")]
    return out


def schedule_totals(rows: list[dict]) -> dict:
    got: dict = {k: fsum(r[k] for r in rows) if k.endswith("usd") else sum(r[k] for r in rows)
                 for k in SCHEDULE_KEYS}
    got["segments"] = len(rows)
    got["capture"] = got["followed_usd"] / got["best_usd"] if got["best_usd"] > 0 else None
    return got


def show_policy(name: str, t: dict) -> None:
    print(f"{name}: following every notice {usd(t['followed_usd'])} = {pct(t['capture'])} of the best schedule "
          f"{usd(t['best_usd'])} (restarts alone {usd(t['best_restarts_only_usd'])}); "
          f"{t['restarts_followed']} restarts and {t['compactions_followed']} /compacts followed, the best "
          f"{t['restarts_best']} and {t['compactions_best']}; {t['segments']} segments")


def recorded_calls(paths: list[Path]) -> list[list]:
    """Each segment's calls as the schedule reads them (ScheduleCall rows), recorded from the engine's replay."""
    from service.engine import schedule as sch

    segments: list[list] = []
    feed = sch.ScheduleLedger.add_call

    def recording(ledger: sch.ScheduleLedger, call: sch.ScheduleCall, basis: AdviceBasis) -> None:
        if not hasattr(ledger, "recorded"):
            ledger.recorded = []  # type: ignore[attr-defined]
            segments.append(ledger.recorded)  # type: ignore[attr-defined]
        ledger.recorded.append(call)  # type: ignore[attr-defined]
        feed(ledger, call, basis)

    sch.ScheduleLedger.add_call = recording  # type: ignore[method-assign]
    try:
        for _, path, _ in transcripts(paths):
            for _ in replay_file(path, PRICES):
                pass
    finally:
        sch.ScheduleLedger.add_call = feed  # type: ignore[method-assign]
    return segments


def replayed(segments: list[list], basis: AdviceBasis, rule: object) -> tuple[float, float]:
    """(best, followed) of these segments under another basis and notice rule."""
    from service.engine import schedule as sch

    best, followed = [], []
    for calls in segments:
        programme, follower = sch._Programme(compact=True), sch._Follower()
        for call in calls:
            programme.add(call, basis)
            follower.step(call, basis, rule)  # type: ignore[arg-type]
        best.append(programme.best()[0])
        followed.append(follower.saved)
    return fsum(best), fsum(followed)


def tune(people_dir: Path, holdout: str) -> dict:
    """The rule's open choices tried on every person but `holdout`; the best on them, tried on `holdout`."""
    from service.engine.schedule import NoticeRule

    people = {p.name: recorded_calls([p]) for p in sorted(people_dir.iterdir()) if p.is_dir()}
    if holdout not in people:
        raise SystemExit(f"no person {holdout!r} under {people_dir}: {', '.join(people)}")
    grid = [(NoticeRule(mf_range=(lo, hi), name=name, breaks=breaks), horizon)
            for lo, hi in ((0.25, 4.0), (0.5, 4.0), (1.0, 4.0), (0.5, 8.0), (1.0, 16.0))
            for name in ("cheaper", "restart") for horizon in (10.0, 20.0, 30.0, 60.0)
            for breaks in ("restart", "cheaper", "off")]
    rows = []
    for rule, horizon in grid:
        basis = replace(BASIS, horizon_calls=horizon).bounded()
        train = [replayed(segs, basis, rule) for name, segs in people.items() if name != holdout]
        best, followed = fsum(b for b, _ in train), fsum(f for _, f in train)
        rows.append({"mf_range": rule.mf_range, "name": rule.name, "horizon": horizon, "breaks": rule.breaks,
                     "train_capture": followed / best if best > 0 else None, "rule": rule, "basis": basis})
    chosen = max(rows, key=lambda r: (r["train_capture"] or 0.0))
    best, followed = replayed(people[holdout], chosen["basis"], chosen["rule"])
    default = max(rows, key=lambda r: (r["mf_range"] == (0.5, 4.0), r["name"] == "cheaper", r["horizon"] == 30.0,
                                       r["breaks"] == "restart"))
    d_best, d_followed = replayed(people[holdout], default["basis"], default["rule"])
    return {"grid": [{k: v for k, v in r.items() if k not in ("rule", "basis")} for r in rows],
            "chosen": {k: v for k, v in chosen.items() if k not in ("rule", "basis")},
            "default": {k: v for k, v in default.items() if k not in ("rule", "basis")},
            "holdout": {"person": holdout, "best_usd": best, "followed_usd": followed,
                        "capture": followed / best if best > 0 else None,
                        "default_followed_usd": d_followed,
                        "default_capture": d_followed / d_best if d_best > 0 else None}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--extra", action="append", type=Path, default=[], metavar="DIR",
                    help="one more corpus beside the defaults (repeatable)")
    ap.add_argument("--policy", action="store_true", help="the rule as a policy: capture of the best schedule")
    ap.add_argument("--people", type=Path, metavar="DIR", help="tune the notice rule on DIR's people (folders)")
    ap.add_argument("--holdout", metavar="NAME", help="the person of --people left out of the tuning")
    args = ap.parse_args(argv)
    if args.people is not None:
        tuned = tune(args.people, args.holdout or "")
        if args.json:
            print(json.dumps(tuned, indent=1))
            return
        for r in tuned["grid"]:
            print(f"mf in {r['mf_range']}, notice names {r['name']:<8}, horizon {r['horizon']:>4.0f}, "
                  f"at breaks {r['breaks']:<8}: {pct(r['train_capture'])} on the others")
        print(f"chosen: {tuned['chosen']}; the default: {tuned['default']}")
        h = tuned["holdout"]
        print(f"held out, {h['person']}: following every notice {usd(h['followed_usd'])} = {pct(h['capture'])} "
              f"of the best schedule {usd(h['best_usd'])} with the chosen rule; {usd(h['default_followed_usd'])} = "
              f"{pct(h['default_capture'])} with the default")
        return
    with tempfile.TemporaryDirectory() as tmp:
        groups = {"given": args.paths} if args.paths else corpus(Path(tmp), args.extra)
        if args.policy:
            totals_of = {name: schedule_totals(schedules(paths)) for name, paths in groups.items()}
            everything = {k: sum(t[k] for t in totals_of.values()) for k in SCHEDULE_KEYS + ("segments",)}
            everything["capture"] = (everything["followed_usd"] / everything["best_usd"]
                                     if everything["best_usd"] > 0 else None)
            totals_of["all"] = everything
            if args.json:
                print(json.dumps(totals_of, indent=1))
                return
            for name, t in totals_of.items():
                show_policy(name, t)
            return
        results = {name: measure(paths) for name, paths in groups.items()}
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name, got in results.items():
        show(name, got)


if __name__ == "__main__":
    main()
