"""Spend: calls folded by message.id, priced per day/model/project/session, and the data-quality block."""
from __future__ import annotations


from service.report.summary import build_summary

from tests.support.channels import price_lookup

# claude-sonnet-4-5 per token: in 3e-6, out 15e-6, cache read 0.3e-6, write 5m 3.75e-6, write 1h 6e-6.
# in 1000, cw5 2000, cw1h 1000, cr 10000, out 500:
#   0.003 + 0.0075 + 0.006 + 0.003 + 0.0075 = $0.027


def spend(files, **kw):
    return build_summary(files, price_lookup(), **kw)


def cost_state(total, t=0):
    from tests.support.transcripts import SID
    return {"type": "cost-state", "sessionId": SID, "totalCostUSD": total,
            "modelUsage": {"claude-sonnet-4-5": {"costUSD": total}}}


def _spend_reference(results: dict, lookup) -> dict:
    """The fold and the sums written the plain way: files by path, a revision replaced only by a
    strictly larger one or an equal one made earlier, every call's USD summed exactly per group."""
    from math import fsum

    from service.channels.spend import call_cost

    winners: dict[str, tuple] = {}
    for path in sorted(results):
        for rec in results[path]["calls"]:
            prev = winners.get(rec[0])
            if prev is None or sum(rec[4:9]) > sum(prev[0][4:9]) or (
                    sum(rec[4:9]) == sum(prev[0][4:9]) and rec[1] < prev[0][1]):
                winners[rec[0]] = (rec, results[path])
    groups: dict[str, dict[str, list]] = {"by_day": {}, "by_model": {}, "by_project": {}}
    main, side_usd, calls = [], [], 0
    projects = {fr["session_id"]: fr.get("cwd") or fr["project"]
                for _, fr in sorted(results.items()) if not fr["subagent"]}
    for rec, fr in winners.values():
        calls += 1
        price, _ = lookup(rec[2])
        if price is None:
            continue
        usd = call_cost(price, *rec[4:9])
        side = rec[3] or fr["subagent"]
        (side_usd if side else main).append(usd)
        for name, key in (("by_day", rec[1][:10]), ("by_model", rec[2]),
                          ("by_project", projects.get(fr["session_id"]) or fr.get("cwd") or fr["project"])):
            groups[name].setdefault(key, []).append(usd)
    return {"calls": calls, "main_usd": fsum(main), "subagents_usd": fsum(side_usd), "total_usd": fsum(main + side_usd),
            **{name: {k: fsum(v) for k, v in sorted(g.items())} for name, g in groups.items()}}


def _file_results():
    from hypothesis import strategies as st

    record = st.tuples(st.sampled_from([f"msg_{i}" for i in range(8)]),                   # shared keys: copies
                       st.sampled_from(["2026-11-01T10:00:00Z", "2026-11-02T23:59:59Z", "2026-11-03T00:00:00Z"]),
                       st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-7", "no-such-model"]),
                       st.booleans(),
                       *[st.integers(0, 300_000)] * 5, st.booleans(),
                       st.none(), st.none()).map(list)  # standard speed and geography
    result = st.fixed_dictionaries({"session_id": st.sampled_from(["s1", "s2"]), "project": st.sampled_from(["-a", "-b"]),
                                    "cwd": st.sampled_from([None, "/w/a", "/w/b"]), "subagent": st.booleans(),
                                    "calls": st.lists(record, max_size=6, unique_by=lambda r: r[0]),
                                    "events": st.just([]), "cost_state": st.none()})
    return st.dictionaries(st.sampled_from([f"/p/f{i}.jsonl" for i in range(6)]), result, max_size=6)


def test_spend_does_not_depend_on_the_order_files_arrive_in():
    """The report feeds files to its tally as workers finish them: any order, a better revision of a
    call arriving after a worse one, must give the plain fold's figures, exactly."""
    from hypothesis import given, settings, strategies as st

    from service.report.summary import spend_tally

    lookup = price_lookup()

    @settings(max_examples=200, deadline=None)
    @given(_file_results(), st.randoms(use_true_random=False))
    def check(results, rnd):
        order = list(results)
        rnd.shuffle(order)
        tally = spend_tally(lookup)
        for path in order[:len(order) // 2]:  # the rest is added by the summary itself
            tally.add(path, results[path])
        fed = build_summary(results, lookup, tally=tally)["spend"]
        plain = build_summary(results, lookup)["spend"]
        assert fed == plain
        want = _spend_reference(results, lookup)
        got = {k: fed[k] for k in ("calls", "by_day", "by_model", "by_project")}
        assert got == {"calls": want["calls"], **{k: {d: round(v, 9) for d, v in want[k].items()}
                                                  for k in ("by_day", "by_model", "by_project")}}
        for k in ("main_usd", "subagents_usd", "total_usd"):
            assert fed[k] == round(want[k], 9)

    check()
