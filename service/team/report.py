"""`team report`: the team's figures summed on the server, in the shape of `ctxlamp report`'s totals.

`members` holds each member's spend, calls, rent, reminders, restarts after a
reminder and channel figures; `by_day`, `by_model` and `by_project` are spend
in USD like the local report's (only groups with priced calls), and
`rent_by_day` the rent. Sums run in SQL over the figure tables (indexed by day).
"""
from __future__ import annotations

from service.team.server import SCHEMA, transaction

SPEND = "SUM(main_usd + subagents_usd)"
PRICED = "HAVING SUM(calls) > SUM(unpriced_calls)"


def _f(x) -> float:
    return round(float(x or 0), 9)


def _where(since: str | None, until: str | None) -> tuple[str, list]:
    parts, params = [], []
    if since:
        parts.append("day >= %s")
        params.append(since)
    if until:
        parts.append("day <= %s")
        params.append(until)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def team_report(url: str, since: str | None = None, until: str | None = None) -> dict:
    """The report as a dict (read with any member's URL: members read the team's rows)."""
    where, params = _where(since, until)
    d = f"{SCHEMA}.day_figures{where}"
    members: dict[str, dict] = {}
    with transaction(url) as cur:
        cur.execute("SET TRANSACTION READ ONLY")
        cur.execute(f"SELECT name FROM {SCHEMA}.member ORDER BY name")
        names = [r[0] for r in cur.fetchall()]
        cur.execute(f"SELECT member, {SPEND}, SUM(main_usd), SUM(subagents_usd), SUM(estimated_usd), SUM(calls), "
                    f"SUM(rent_usd), SUM(reminders), SUM(restarts_after_reminder) FROM {d} GROUP BY member", params)
        spend = {r[0]: r[1:] for r in cur.fetchall()}
        cur.execute(f"SELECT member, SUM(pinch_saved_usd), SUM(pinch_tokens_saved), SUM(pinch_events), "
                    f"SUM(edit_str_replace_calls), SUM(edit_str_replace_old_string_tokens), "
                    f"SUM(edit_str_replace_old_string_usd), SUM(edit_str_replace_misses), SUM(edit_anchored_calls), "
                    f"SUM(edit_anchored_avoided_output_tokens), SUM(retrieval_calls), SUM(retrieval_bytes_served), "
                    f"SUM(retrieval_bytes_saved) FROM {SCHEMA}.channel_day{where} GROUP BY member", params)
        channels = {r[0]: r[1:] for r in cur.fetchall()}
        cur.execute(f"SELECT day, {SPEND} FROM {d} GROUP BY day {PRICED} ORDER BY day", params)
        by_day = {r[0].isoformat(): _f(r[1]) for r in cur.fetchall()}
        cur.execute(f"SELECT day, SUM(rent_usd) FROM {d} GROUP BY day HAVING SUM(rent_usd) > 0 ORDER BY day", params)
        rent_by_day = {r[0].isoformat(): _f(r[1]) for r in cur.fetchall()}
        cur.execute(f"SELECT model, {SPEND} FROM {d} GROUP BY model {PRICED} ORDER BY model", params)
        by_model = {r[0]: _f(r[1]) for r in cur.fetchall()}
        cur.execute(f"SELECT project, {SPEND} FROM {d} GROUP BY project {PRICED} ORDER BY project", params)
        by_project = {r[0]: _f(r[1]) for r in cur.fetchall()}
    for name in sorted(set(names) | set(spend) | set(channels)):
        s = spend.get(name) or (0,) * 8
        c = channels.get(name) or (0,) * 12
        members[name] = {
            "spend_usd": _f(s[0]), "main_usd": _f(s[1]), "subagents_usd": _f(s[2]), "estimated_usd": _f(s[3]),
            "calls": int(s[4] or 0), "rent_usd": _f(s[5]), "reminders": int(s[6] or 0),
            "restarts_after_reminder": int(s[7] or 0),
            "pinch_saved_usd": _f(c[0]), "pinch_tokens_saved": int(c[1] or 0), "pinch_events": int(c[2] or 0),
            "edit": {"str_replace_calls": int(c[3] or 0), "str_replace_old_string_tokens": int(c[4] or 0),
                     "str_replace_old_string_usd": _f(c[5]), "str_replace_misses": int(c[6] or 0),
                     "anchored_calls": int(c[7] or 0), "anchored_avoided_output_tokens": int(c[8] or 0)},
            "retrieval": {"calls": int(c[9] or 0), "bytes_served": int(c[10] or 0), "bytes_saved": int(c[11] or 0)},
        }
    return {
        "period": {"since": since, "until": until, "timezone": "UTC"},
        "members": members,
        "total_usd": _f(sum(m["spend_usd"] for m in members.values())),
        "rent_usd": _f(sum(m["rent_usd"] for m in members.values())),
        "by_day": by_day, "rent_by_day": rent_by_day, "by_model": by_model, "by_project": by_project,
    }


def render_text(doc: dict) -> str:
    p = doc["period"]
    lines = [f"ctxlamp team report  {p.get('since') or 'start'} .. {p.get('until') or 'now'} (UTC days)", ""]
    head = f"{'member':<28} {'spend $':>11} {'calls':>8} {'rent $':>10} {'remind':>6} {'heeded':>6} {'pinch $':>9}"
    lines.append(head)
    for name, m in doc["members"].items():
        lines.append(f"{name[:28]:<28} {m['spend_usd']:>11.2f} {m['calls']:>8} {m['rent_usd']:>10.2f} "
                     f"{m['reminders']:>6} {m['restarts_after_reminder']:>6} {m['pinch_saved_usd']:>9.2f}")
    lines.append(f"{'total':<28} {doc['total_usd']:>11.2f}")
    for title, block in (("by model", doc["by_model"]), ("by project", doc["by_project"])):
        lines += ["", title]
        for k, usd in sorted(block.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {(k or '(none)')[:40]:<40} ${usd:.2f}")
    return "\n".join(lines) + "\n"
