"""`team report`: the team's figures summed on the server, in the shape of `ctxlamp report`'s totals.

`members` holds each member's spend, calls, rent, reminders, restarts after a
reminder and channel figures; `by_day`, `by_model` and `by_project` are spend
in USD like the local report's (only groups with priced calls), and
`rent_by_day` the rent. Sums run in SQL over the figure tables (indexed by day).
"""
from __future__ import annotations

import math

from service.engine.prices import label_text
from service.team import bounds
from service.team.figures import CHANNEL_FIELDS, DAY_SUMS
from service.team.server import SCHEMA, TeamError, transaction

SPEND = "SUM(main_usd + subagents_usd)"
BILLED = "SUM(main_usd + subagents_usd + unwritten_usd)"  # with what Claude Code billed but did not write


# the rows a reader takes: a day every reader holds and money that is a sane number (service/team/bounds.py);
# the others (written before the server's CHECKs, or by a server without them) are counted and said
DAY_OK = bounds.row_ok_sql([c for c in DAY_SUMS if bounds.is_money(c)])
CHANNEL_OK = bounds.row_ok_sql([c for c in CHANNEL_FIELDS if bounds.is_money(c)])


def _f(x) -> float:
    value = float(x or 0)
    if not math.isfinite(value):  # the rows are bounded in the query: a sum cannot get here, an answer can
        raise TeamError("the team server answered a figure that is not a number; the report is not shown")
    return round(value, 9)


def _period(since: str | None, until: str | None) -> tuple[str, list]:
    parts, params = [], []
    if since:
        parts.append("day >= %s")
        params.append(since)
    if until:
        parts.append("day <= %s")
        params.append(until)
    return " AND ".join(parts) or "true", params


def team_report(url: str, since: str | None = None, until: str | None = None) -> dict:
    """The report as a dict (read with any member's URL: members read the team's rows).

    One pass over each figure table: GROUPING SETS give the per-member, per-day,
    per-model and per-project sums of the day rows in a single scan.
    """
    period, params = _period(since, until)
    with transaction(url) as cur:
        cur.execute("SET TRANSACTION READ ONLY")
        cur.execute(f"SELECT name FROM {SCHEMA}.member ORDER BY name")
        names = [r[0] for r in cur.fetchall()]
        cur.execute(
            f"SELECT GROUPING(member, day, model, project), member, day, model, project, {SPEND}, SUM(main_usd), "
            f"SUM(subagents_usd), SUM(estimated_usd), SUM(calls), SUM(unpriced_calls), SUM(rent_usd), "
            f"SUM(reminders), SUM(restarts_after_reminder), {BILLED}, SUM(unwritten_usd), "
            f"SUM(restart_first_usd), SUM(restart_best_usd), SUM(restart_missed_usd), SUM(restart_segments_reminded) "
            f"FROM {SCHEMA}.day_figures WHERE {period} AND {DAY_OK} "
            f"GROUP BY GROUPING SETS ((member), (day), (model), (project))", params)
        day_rows = cur.fetchall()
        cur.execute(f"SELECT member, SUM(pinch_saved_usd), SUM(pinch_tokens_saved), SUM(pinch_events), "
                    f"SUM(edit_str_replace_calls), SUM(edit_str_replace_old_string_tokens), "
                    f"SUM(edit_str_replace_old_string_usd), SUM(edit_str_replace_misses), SUM(edit_anchored_calls), "
                    f"SUM(edit_anchored_avoided_output_tokens), SUM(retrieval_calls), SUM(retrieval_bytes_served), "
                    f"SUM(retrieval_bytes_saved) FROM {SCHEMA}.channel_day WHERE {period} AND {CHANNEL_OK} "
                    f"GROUP BY member", params)
        channels = {r[0]: r[1:] for r in cur.fetchall()}
        cur.execute(f"SELECT member, pg_catalog.count(*) FROM (SELECT member FROM {SCHEMA}.day_figures "
                    f"WHERE {period} AND NOT {DAY_OK} UNION ALL SELECT member FROM {SCHEMA}.channel_day "
                    f"WHERE {period} AND NOT {CHANNEL_OK}) AS bad GROUP BY member ORDER BY member", params * 2)
        skipped = {r[0]: int(r[1]) for r in cur.fetchall()}
    # GROUPING(member, day, model, project) is a bit mask: 0b0111 = grouped by member alone, and so on
    spend, by_day, rent_by_day, by_model, by_project = {}, {}, {}, {}, {}
    billed_by_day, restart_by_day = {}, {}
    for grouping, member, day, model, project, *sums in day_rows:
        priced = (sums[4] or 0) > (sums[5] or 0)  # calls > unpriced calls: the local report lists only these
        if grouping == 0b0111:
            spend[member] = sums
        elif grouping == 0b1011:
            if priced:
                by_day[day.isoformat()] = _f(sums[0])
            if (sums[9] or 0) > 0:
                billed_by_day[day.isoformat()] = _f(sums[9])
            if (sums[6] or 0) > 0:
                rent_by_day[day.isoformat()] = _f(sums[6])
            if sums[12] or sums[11]:
                restart_by_day[day.isoformat()] = {"first_reminder_usd": _f(sums[11]), "best_single_usd": _f(sums[12])}
        elif grouping == 0b1101 and priced:
            by_model[model] = _f(sums[0])
        elif grouping == 0b1110 and priced:
            by_project[project] = _f(sums[0])
    members: dict[str, dict] = {}
    for name in sorted(set(names) | set(spend) | set(channels)):
        s = spend.get(name) or (0,) * 15
        c = channels.get(name) or (0,) * 12
        members[name] = {
            "spend_usd": _f(s[0]), "main_usd": _f(s[1]), "subagents_usd": _f(s[2]), "estimated_usd": _f(s[3]),
            "calls": int(s[4] or 0), "rent_usd": _f(s[6]), "reminders": int(s[7] or 0),
            "restarts_after_reminder": int(s[8] or 0),
            "billed_usd": _f(s[9]), "unwritten_usd": _f(s[10]),
            "restart_savings": {"label": "estimated", "first_reminder_usd": _f(s[11]), "best_single_usd": _f(s[12]),
                                "missed_usd": _f(s[13]), "segments_with_reminders": int(s[14] or 0)},
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
        "billed_usd": _f(sum(m["billed_usd"] for m in members.values())),
        "unwritten_usd": _f(sum(m["unwritten_usd"] for m in members.values())),
        "billed_by_day": dict(sorted(billed_by_day.items())),
        "rent_usd": _f(sum(m["rent_usd"] for m in members.values())),
        "by_day": dict(sorted(by_day.items())), "rent_by_day": dict(sorted(rent_by_day.items())),
        "restart_by_day": dict(sorted(restart_by_day.items())),
        "by_model": dict(sorted(by_model.items())), "by_project": dict(sorted(by_project.items())),
        "skipped_rows": skipped,
    }


def render_text(doc: dict) -> str:
    """The report for a terminal: every name another member chose printed through service/client/textsafe.py."""
    from service.client.textsafe import printable

    p = doc["period"]
    lines = [f"ctxlamp team report  {p.get('since') or 'start'} .. {p.get('until') or 'now'} (UTC days)", ""]
    head = (f"{'member':<28} {'billed $':>11} {'calls $':>11} {'calls':>8} {'rent $':>10} {'remind':>6} "
            f"{'heeded':>6} {'pinch $':>9} {'restart@rem $':>13} {'best $':>8}")
    lines.append(head)
    for name, m in doc["members"].items():
        restarts = m.get("restart_savings") or {}
        lines.append(f"{printable(name, 28):<28} {m.get('billed_usd', m['spend_usd']):>11.2f} {m['spend_usd']:>11.2f} "
                     f"{m['calls']:>8} {m['rent_usd']:>10.2f} {m['reminders']:>6} {m['restarts_after_reminder']:>6} "
                     f"{m['pinch_saved_usd']:>9.2f} {restarts.get('first_reminder_usd', 0.0):>13.2f} "
                     f"{restarts.get('best_single_usd', 0.0):>8.2f}")
    lines.append(f"{'total':<28} {doc.get('billed_usd', doc['total_usd']):>11.2f} {doc['total_usd']:>11.2f}")
    for name, count in (doc.get("skipped_rows") or {}).items():
        lines.append(f"skipped {count} rows of {printable(name, 60)}: a day outside "
                     f"{bounds.DAY_FIRST}..{bounds.DAY_LAST} or money that is not a number within "
                     f"${bounds.MONEY_MAX:,.0f}")
    lines.append("billed = the calls Claude Code wrote + the requests it made and did not write (measured from "
                 "its cost-state)")
    for title, block in (("by model", doc["by_model"]), ("by project", doc["by_project"])):
        lines += ["", title]
        for k, usd in sorted(block.items(), key=lambda kv: -kv[1]):
            name = label_text(k) if title == "by model" and k else k
            lines.append(f"  {printable(name or '(none)', 40):<40} ${usd:.2f}")
    return "\n".join(lines) + "\n"
