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

    python bench/advice.py                   # the repo's fixtures and the demo
    python bench/advice.py --extra DIR       # and the transcripts under DIR, as a corpus of their own
    python bench/advice.py --json            # the figures as JSON
    python bench/advice.py PATH...           # these transcripts or folders
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--extra", action="append", type=Path, default=[], metavar="DIR",
                    help="one more corpus beside the defaults (repeatable)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        groups = {"given": args.paths} if args.paths else corpus(Path(tmp), args.extra)
        results = {name: measure(paths) for name, paths in groups.items()}
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for name, got in results.items():
        show(name, got)


if __name__ == "__main__":
    main()
