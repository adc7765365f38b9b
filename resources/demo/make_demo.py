"""Generate the demo data the window and `ctxlamp screenshot --demo` show.

Run `python resources/demo/make_demo.py` to rewrite the JSON files next to it.
The figures are simulated, not measured: a seeded random session is pushed
through the formulas of MEASUREMENT.md section 7-9 (growth g, sweet spot N*,
landmarks, rent, wallet laps, lamp), so every number is internally consistent.
The lead will regenerate these files from a real replay later; the shapes are
those of docs/api.md (SNAPSHOT, SERIES, PROFILE, CHANNEL).
"""
from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "claude-sonnet-4-5"
# USD per token (published Sonnet 4.5 prices per million / 1e6)
P_IN, P_OUT, P_R, P_W5 = 3.0e-6, 15.0e-6, 0.30e-6, 3.75e-6
G_FLOOR, EPS_AMBER, EPS_CRIT = 500.0, 0.05, 0.20
WINDOW = 200_000
T0 = datetime(2026, 11, 29, 9, 0, tzinfo=timezone.utc)


def iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def a_of_n(n, b0, g, p_w, p_r):
    return p_w * b0 / n + p_r * b0 + p_w * g + p_r * g * (n - 1) / 2


def landmark(eps, b0, g, p_w, p_r, n_star, a_star):
    # A(N) = (1+eps) A*  <=>  (p_r g/2) N^2 + (p_r B0 + p_w g - p_r g/2 - (1+eps) A*) N + p_w B0 = 0
    a = p_r * g / 2
    b = p_r * b0 + p_w * g - p_r * g / 2 - (1 + eps) * a_star
    c = p_w * b0
    disc = max(0.0, b * b - 4 * a * c)
    return ((-b + math.sqrt(disc)) / (2 * a)) / n_star


def simulate(session_id: str, project: str, segments: list[int], seed: int, start: datetime):
    """Simulate a session of len(segments) segments; returns (snapshot, series, profiles, reminders)."""
    rng = random.Random(seed)
    files = [f"{project}/src/{name}" for name in (
        "engine.py", "store.py", "api.py", "cli.py", "tail.py", "prices.py", "watch.py",
        "tests/test_engine.py", "tests/test_api.py", "README.md", "docs/api.md", "pyproject.toml")]
    files += ["/usr/lib/python3.11/json/__init__.py", f"{project}/build/old_output.log"]
    calls, resets, reminders, profiles = [], [], [], []
    t = start
    call_no = 0
    turns = 0
    for seg, n_calls in enumerate(segments):
        if seg > 0:
            resets.append({"call": call_no, "at": iso(t), "segment": seg})
            t += timedelta(seconds=30)
        floor = rng.randint(14_000, 22_000)
        contrib: dict[str, int] = {}
        stock = floor
        prev_stock = 0
        ts1 = None
        rho_prev = 0.0
        bill_cycle = 0.0
        phase = 0.0
        laps = 0
        seg_start = t
        seg_calls = []
        l_peak = 0
        spend_in = spend_out = 0.0
        for k in range(1, n_calls + 1):
            call_no += 1
            if rng.random() < 0.25:
                turns += 1
            # what this call added: a file read (useful) or conversation / tool noise (dead weight later)
            if seg == len(segments) - 1 and k in (3, 5) and n_calls > 5:
                path = files[-2] if k == 3 else files[-1]  # one read outside the project, one excluded
                contrib[path] = rng.randint(1500, 4000)
                stock += contrib[path]
            elif k > 1:
                if rng.random() < 0.35:
                    path = rng.choice(files)
                    tok = rng.randint(800, 6000)
                    contrib[path] = tok  # a re-read replaces
                    stock += tok + rng.randint(100, 600)
                else:
                    stock += rng.randint(600, 3200)
            cr = prev_stock if k > 1 else 0
            cw5 = stock - cr - 3
            in_tok = 3
            out = rng.randint(80, 1500)
            b_full = floor + sum(contrib.values())
            excluded = {p for p in contrib if not p.startswith(project) or p.endswith(".log")}
            b_default = floor + sum(v for p, v in contrib.items() if p not in excluded)
            ts1 = stock if ts1 is None else ts1
            g = G_FLOOR if k == 1 else max(G_FLOOR, (stock - ts1) / (k - 1))
            p_w, p_r = P_W5, P_R
            c_ratio = p_r / p_w
            b0 = b_default
            n_star = math.sqrt(2 * b0 / (c_ratio * g))
            a_star = a_of_n(n_star, b0, g, p_w, p_r)
            x = stock / b0
            x_sweet = 1 + g * n_star / b0
            u = max(0.0, (x - 1) / (x_sweet - 1))
            dhat = (x_sweet - x) * b0 / g
            u_amber = landmark(EPS_AMBER, b0, g, p_w, p_r, n_star, a_star)
            u_crit = landmark(EPS_CRIT, b0, g, p_w, p_r, n_star, a_star)
            u_mirror = max(0.0, 2 - u_amber)
            mf = (p_r * stock + p_w * g) / a_star
            pp = 1 / (c_ratio * (x - 1)) if x > 1 else None
            bill_in = P_IN * in_tok + P_W5 * cw5 + P_R * cr
            bill_out = P_OUT * out
            spend_in += bill_in
            spend_out += bill_out
            rho = bill_in * max(0, stock - b0) / stock
            d_rent = (rho_prev + rho) / 2
            rho_prev = rho
            bill_cycle += d_rent
            r_usd = p_w * b0
            interval = r_usd / min(4.0, max(0.5, mf))
            phase += d_rent / interval
            t += timedelta(seconds=rng.randint(15, 75))
            if phase >= 1:
                laps += int(phase)
                phase -= int(phase)
                rem = {"session_id": session_id, "segment": seg, "lap": laps, "call": call_no, "at": iso(t),
                       "restart_usd": r_usd, "payback_calls": pp, "rent_usd": bill_cycle}
                reminders.append(rem)
            if u < u_mirror:
                state, colour = "warming", "white"
            elif u < u_amber:
                state, colour = "good", "green"
            elif u < u_crit:
                state, colour = "warning", "amber"
            else:
                state, colour = "critical", "red"
            l_peak = max(l_peak, cr)
            seg_calls.append((t, d_rent))
            span_start = t - timedelta(minutes=30)
            recent = [(tt, dr) for tt, dr in seg_calls if tt >= span_start]
            span = max(60.0, (t - recent[0][0]).total_seconds()) if recent else 60.0
            br = sum(dr for _, dr in recent) / span * 3600
            u_max = max(1.2 * u_crit, 1.1 * u)
            curve = [[u_max * i / 64, a_of_n(max(1e-9, u_max * i / 64 * n_star), b0, g, p_w, p_r) / a_star]
                     for i in range(1, 65)]
            snap = {
                "session_id": session_id, "transcript": f"~/.claude/projects/demo/{session_id}.jsonl",
                "segment": seg, "calls": call_no, "turns": turns, "model": MODEL, "price_source": "table",
                "totalStock": stock, "L": cr, "L_peak": l_peak, "B": min(b_full, stock), "B_default": b_default,
                "floor": floor, "D": max(0, b_full - cr), "g": g, "cRatio": c_ratio, "x": x, "xSweet": x_sweet,
                "u": u, "dhat": dhat, "mf": mf, "pp": pp, "bp": rho, "br": br, "bill_cycle_usd": bill_cycle,
                "wallet_phase": phase, "laps": laps,
                "lamp": {"state": state, "colour": colour, "reason": None},
                "skeleton": {"u_mirror": u_mirror, "u_amber": u_amber, "u_crit": u_crit, "curve": curve},
                "reminder": ({k2: reminders[-1][k2] for k2 in ("lap", "call", "at")}
                             if reminders and reminders[-1]["segment"] == seg else None),
                "spend": {"bill_in_usd": spend_in, "bill_out_usd": spend_out},
                "window": {"tokens": stock, "limit": WINDOW, "pct": 100 * stock / WINDOW},
                "cache": {"ttl_s": 300, "expires_at": iso(t + timedelta(seconds=300)),
                          "cold_rewrite_usd": P_W5 * stock},
                "skipped_lines": 0, "project": project, "updated_at": iso(t),
            }
            calls.append({"call": call_no, "key": f"msg_{session_id[:6]}_{call_no:04d}", "at": iso(t),
                          "segment": seg, "totalStock": stock, "L": cr, "B": min(b_full, stock),
                          "B_default": b_default, "x": x, "u": u, "xSweet": x_sweet, "bp": rho,
                          "bill_cycle_usd": bill_cycle, "laps": laps, "lamp": colour})
            prev_stock = stock
        profiles.append({
            "session_id": session_id, "segment": seg, "started_at": iso(seg_start), "ended_at": iso(t),
            "end_reason": "compact" if seg < len(segments) - 1 else "open", "model": MODEL,
            "calls": n_calls, "turns": turns, "B": snap["B"], "L_peak": l_peak, "g": g, "br": br, "mf": mf,
            "bill_in_usd": spend_in, "bill_out_usd": spend_out, "rent_usd": bill_cycle, "laps": laps,
            "duration_s": (t - seg_start).total_seconds(), "path_totals": dict(contrib),
        })
    paths = []
    for p, tok in sorted(contrib.items()):
        why = None if p.startswith(project) and not p.endswith(".log") else (
            "outside_cwd" if not p.startswith(project) else "excluded")
        paths.append({"path": p, "tokens": tok, "selected": why is None, "why": why})
    series = {"session_id": session_id, "calls": calls, "resets": resets,
              "reminders": [{k2: r[k2] for k2 in ("lap", "call", "at")} for r in reminders],
              "skeleton": snap["skeleton"], "paths": paths}
    return snap, series, profiles, reminders


def channels(seed: int = 7) -> dict:
    rng = random.Random(seed)
    days = [T0 - timedelta(days=13 - i) for i in range(14)]
    days = [d.replace(hour=0, minute=0) for d in days]
    edit, pinch, retr = [], [], []
    for d in days:
        busy = rng.random() < 0.85
        n = rng.randint(8, 60) if busy else 0
        old = sum(rng.randint(20, 400) for _ in range(n))
        edit.append({"start": iso(d), "str_replace_calls": n, "str_replace_old_string_tokens": old,
                     "str_replace_misses": rng.randint(0, max(0, n // 10)),
                     "anchored_calls": rng.randint(0, n // 3) if n else 0,
                     "old_string_usd": old * P_OUT})
        ev = rng.randint(0, 6) if busy else 0
        orig = sum(rng.randint(60_000, 160_000) for _ in range(ev))
        final = int(orig * rng.uniform(0.25, 0.5))
        saved = orig - final
        cache_rate = 0.9
        pinch.append({"start": iso(d), "events": ev, "original_tokens": orig, "final_tokens": final,
                      "tokens_saved": saved, "usd_saved": saved * ((1 - cache_rate) * P_IN + cache_rate * P_R)})
        calls = rng.randint(5, 80) if busy else 0
        served = sum(rng.randint(500, 9000) for _ in range(calls))
        retr.append({"start": iso(d), "calls": calls, "bytes_served": served,
                     "bytes_saved": int(served * rng.uniform(0.5, 3.0))})

    def total(rows):
        out = {}
        for r in rows:
            for k, v in r.items():
                if k != "start":
                    out[k] = out.get(k, 0) + v
        return out

    return {
        "edit": {"channel": "edit", "label": "measured", "bucket": "day", "buckets": edit, "totals": total(edit),
                 "sources": ["transcripts (Edit, MultiEdit)", "~/.lean-ctx/edit_metering.json"]},
        "pinch": {"channel": "pinch", "label": "measured", "bucket": "day", "buckets": pinch,
                  "totals": total(pinch), "sources": ["transcripts (compactions, context editing)"]},
        "retrieval": {"channel": "retrieval", "label": "estimated", "bucket": "day", "buckets": retr,
                      "totals": total(retr), "sources": ["transcripts (Grep, Glob)"]},
    }


def main() -> None:
    sessions = [
        ("6f1c2a9e-demo-4d1b-9a7e-amber000001", "/home/dev/ctxlamp", [70, 75], 11, T0),
        ("b2e48c10-demo-4f0a-8c3d-green0000002", "/home/dev/webshop", [34], 5, T0 + timedelta(minutes=40)),
        ("0c9d7f31-demo-47aa-b1e2-white0000003", "/home/dev/notes", [3], 3, T0 + timedelta(minutes=95)),
    ]
    snaps, series, profiles = [], {}, []
    for sid, project, segs, seed, start in sessions:
        snap, ser, prof, _ = simulate(sid, project, segs, seed, start)
        snaps.append(snap)
        series[sid] = ser
        profiles.extend(prof)
    # a few older, closed segments for the History tab
    for i in range(6):
        sid = f"{i:02d}a0b1c2-demo-old-session-{i:06d}"
        _, _, prof, _ = simulate(sid, "/home/dev/ctxlamp", [40 + 17 * i], 100 + i, T0 - timedelta(days=6 - i))
        prof[-1]["end_reason"] = "rotation" if i % 2 else "clear"
        profiles.extend(prof)
    profiles.sort(key=lambda p: p["started_at"], reverse=True)
    status = {"sessions": snaps, "followed": sessions[0][0],
              "service": {"version": "0.1.0", "started_at": iso(T0), "scan": {"state": "idle", "done": 3, "total": 3},
                          "db": {"ok": True, "error": None}, "observer": "inotify", "observer_reason": None}}
    # the shape of the service's GET /api/v1/config (service/config.py DEFAULTS)
    config = {
        "engine": {"g_floor": int(G_FLOOR), "eps_amber": EPS_AMBER, "eps_crit": EPS_CRIT},
        "selection": {"exclude": ["**/node_modules/**", "**/*.log"]},
        "reminders": {"min_gap": "10m"},
        "history": {"store_prompts": True},
        "sessions": {"live_hours": 24},
        "database": {"url": ""},
        "tokenizer": {"ratio": {}},
    }
    out = {"status.json": status, "series.json": series, "segments.json": {"segments": profiles},
           "channels.json": channels(), "config.json": config}
    for name, obj in out.items():
        (HERE / name).write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
