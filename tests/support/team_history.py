"""A member's local history for the team tests: transcripts (spend, edits, grep, compactions) and the
segment profiles and reminders the service would have archived, all synthetic and seeded."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.corpus import ROOT
from tests.support.transcripts import call, compact, prompt, result, sidechain, tool

MODELS = ("claude-sonnet-4-5", "claude-opus-4-6", "claude-not-in-the-price-table")


def _entries(seed: int, s: int, days: int, sid: str, cwd: str) -> list[dict]:
    out = []
    for d in range(days):
        base = d * 86400 + s * 3600 + seed * 60
        out.append(prompt(f"task {seed} {s} {d}", base))
        for i in range(5):
            t = base + 10 + i * 20
            model = MODELS[(i + s + seed) % len(MODELS)] if i < 4 else MODELS[0]
            tools = []
            if i == 1:
                tools = [tool(f"e{seed}x{s}x{d}", "Edit", file_path=f"{cwd}/a.py",
                              old_string="value = 1\n" * (2 + seed % 5), new_string="value = 2\n")]
            elif i == 2:
                tools = [tool(f"g{seed}x{s}x{d}", "Grep", pattern="value", path=cwd)]
            out.append(call(f"msg_{seed}_{s}_{d}_{i}", t, inn=100 + seed, cw5=400 + 10 * i, cr=20_000 + 1_500 * i,
                            out=40 + 7 * i + seed, model=model, tools=tools))
            if tools and tools[0]["name"] == "Edit":
                out.append(result(tools[0]["id"], f"The file {cwd}/a.py has been updated.", t + 5))
            elif tools:
                out.append(result(tools[0]["id"], f"{cwd}/a.py:1:value = 1\n{cwd}/b.py:3:value", t + 5))
        out.append(sidechain(call(f"msg_{seed}_{s}_{d}_sub", base + 140, inn=30, cw5=900, cr=4_000, out=60,
                                  model=MODELS[1])))  # a subagent's call, inline
        out.append(compact(base + 150, pre=30_000 + seed, post=5_000))
        out.append(call(f"msg_{seed}_{s}_{d}_after", base + 160, inn=50, cw5=5_000, cr=0, out=30, model=MODELS[0]))
    if s == 0:
        out.append(cost_state(out, extra=(MODELS[0], [0, 0, 0, 30_000 + seed, 5_000])))
    for e in out:
        e["sessionId"], e["cwd"] = sid, cwd
    return out


def cost_state(entries: list[dict], extra: tuple[str, list[int]]) -> dict:
    """Claude Code's cost-state after these entries: their calls' tokens per model, plus one request it made
    and did not write (a compaction summary: `extra`), so the team's billed figure has something to add."""
    usage: dict[str, list[int]] = {}
    for e in entries:
        u = (e.get("message") or {}).get("usage") if e.get("type") == "assistant" else None
        if not u:
            continue
        acc = usage.setdefault(e["message"]["model"], [0] * 5)
        split = u.get("cache_creation") or {}
        for i, v in enumerate((u["input_tokens"], split.get("ephemeral_5m_input_tokens", 0),
                               split.get("ephemeral_1h_input_tokens", 0), u["cache_read_input_tokens"],
                               u["output_tokens"])):
            acc[i] += v
    model, more = extra
    usage[model] = [a + b for a, b in zip(usage.get(model, [0] * 5), more)]
    return {"type": "cost-state", "totalCostUSD": 1.0, "modelUsage": {
        m: {"inputTokens": u[0], "cacheCreationEphemeral5mInputTokens": u[1],
            "cacheCreationEphemeral1hInputTokens": u[2], "cacheReadInputTokens": u[3], "outputTokens": u[4],
            "cacheCreationInputTokens": u[1] + u[2]} for m, u in usage.items()}}


def write_member(home: Path, claude: Path, seed: int, days: int = 3, sessions: int = 2) -> list[dict]:
    """Transcripts under claude/projects and profiles + reminders in home's database; returns the profiles."""
    profiles = []
    for s in range(sessions):
        sid = f"{seed:08d}-0000-4000-8000-{s:012d}"
        cwd = f"/home/member{seed}/project{s}"
        folder = claude / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in _entries(seed, s, days, sid, cwd)))
        for d in range(days):
            profiles.append({"session_id": sid, "project": cwd, "segment": d, "model": MODELS[0],
                             "started_at": f"2026-11-0{1 + d}T09:00:00Z", "ended_at": f"2026-11-0{1 + d}T10:00:00Z",
                             "end_reason": "compact" if d % 2 == 0 else "rotation", "calls": 5, "turns": 1,
                             "B": 20_000, "L_peak": 30_000, "g": 1500.0, "br": 0.1, "mf": 0.5, "bill_in_usd": 0.2,
                             "bill_out_usd": 0.01, "rent_usd": 0.05 * (1 + d + seed), "laps": 1, "duration_s": 3600.0,
                             "path_totals": {f"{cwd}/a.py": 100},
                             # segment 1 has no reminder (below): its best restart is a saving the lamp missed
                             "restart_savings": {"first_reminder_call": None if d == 1 else 3,
                                                 "first_reminder_usd": 0.0 if d == 1 else 0.01 * (1 + d) - 0.002 * s,
                                                 "best_call": 2, "best_usd": 0.02 * (1 + d) + 0.001 * seed,
                                                 "calls_after_reminder": None if d == 1 else 2}})
    code = ("import json, sys; from service.store import Store\n"
            "st = Store(sys.argv[1]); rows = json.loads(sys.argv[2])\n"
            "for p in rows:\n"
            "    st.sessions.upsert_session(p['session_id'], project=p['project'], model=p['model'])\n"
            "    st.sessions.archive_profile(p)\n"
            "    if p['segment'] != 1: st.sessions.record_reminder(p['session_id'], p['segment'], 1, 3, p['started_at'])\n"
            "st.close()\n")
    subprocess.run([sys.executable, "-c", code, str(home / "ctxlamp.db"), json.dumps(profiles)], cwd=ROOT,
                   check=True, env={**os.environ, "CTXLAMP_HOME": str(home)})
    return profiles


def member_env(base: Path, seed: int) -> dict:
    home, claude = base / f"home{seed}", base / f"claude{seed}"
    (claude / "projects").mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CTXLAMP_HOME=str(home), CLAUDE_CONFIG_DIR=str(claude), HOME=str(base / f"user{seed}"))
    for k in ("LEAN_CTX_DATA_DIR", "CTXLAMP_USAGE_DB", "CTXLAMP_ROUTER_DB"):
        env.pop(k, None)
    return env
