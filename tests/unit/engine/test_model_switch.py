"""A /model switch inside a session (issue 19): every call priced and valued at its own model.

The switch is not a reset: B, turns, wallet and reminders carry on. From the
first call on the new model, the restart price, p_w, cRatio, the sweet spot and
the lamp are the new model's; that call writes its prompt anew into the new
model's cache, and its rent is read like any cache miss (docs/decisions.md).
"""
from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.engine import EngineConfig
from service.engine.model_mix import profile_models
from service.engine_setup.engines import load_prices
from tests.support import transcripts as T
from tests.support.engine_runs import calls_of, run

PRICES = load_prices()
SONNET, OPUS, OPUS55 = "claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-5-5"


def hand_bill(model: str, inn: int, cw5: int, cw1h: int, cr: int, out: int) -> tuple[float, float]:
    """One call priced alone at its model, straight from the table's figures (long-context tier included)."""
    price, _ = PRICES.lookup(model)
    if price is None:
        return 0.0, 0.0
    price = price.for_prompt(inn + cw5 + cw1h + cr)
    return price.p_in * inn + price.p_w5 * cw5 + price.p_w1h * cw1h + price.p_r * cr, price.p_out * out


# ---- the property: a segment's bill is the sum of its calls, each priced alone at its own model ----

MODELS = [SONNET, OPUS, "claude-haiku-4-5", OPUS55, "claude-sonnet-4-5-20250929",  # an alias of the table
          "claude-opus-9-9",  # not in the table: its family's newest entry ("family")
          "gpt-unknown", "claude-"]  # no family: no price ("unknown")

call_step = st.tuples(
    st.just("call"), st.sampled_from(MODELS),
    st.one_of(st.integers(1_000, 150_000), st.integers(200_001, 600_000)),  # long-context-size prompts too
    st.floats(0, 1), st.booleans(), st.integers(1, 3000), st.integers(0, 3))
steps = st.lists(st.one_of(call_step, st.tuples(st.just("compact")), st.tuples(st.just("prompt"))),
                 min_size=1, max_size=30)


def build(plan):
    """Entries for a plan, and the final usage of each call in segment order: [[(model, usage), ...], ...]."""
    entries, segments, t = [T.prompt("go", 0)], [[]], 0.0
    for n, step in enumerate(plan):
        t += 5
        if step[0] == "compact":
            entries.append(T.compact(t))
            segments.append([])
            continue
        if step[0] == "prompt":
            entries.append(T.prompt(f"next {n}", t))
            continue
        _, model, stock, read_share, one_hour, out, revisions = step
        cr = int((stock - 3) * read_share)
        writes = stock - cr - 3
        cw5, cw1h = (0, writes) if one_hour else (writes, 0)
        for k in range(min(revisions, out)):  # earlier revisions of the same response, output still growing
            entries.append(T.call(f"m{n}", t, inn=3, cw5=cw5, cw1h=cw1h, cr=cr, out=k, model=model))
        entries.append(T.call(f"m{n}", t, inn=3, cw5=cw5, cw1h=cw1h, cr=cr, out=out, model=model))
        segments[-1].append((model, dict(inn=3, cw5=cw5, cw1h=cw1h, cr=cr, out=out)))
    return entries, [s for s in segments if s]


def alone(model: str, usage: dict) -> tuple[float, float]:
    """The bill of one call fed to an engine of its own."""
    _, events = run([T.call("alone", 1, model=model, **usage)])
    profile = events[-1]["segments"][0]
    return profile["bill_in_usd"], profile["bill_out_usd"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_a_segments_bill_is_the_sum_of_its_calls_each_priced_alone_at_its_own_model(plan):
    entries, expected = build(plan)
    _, events = run(entries)
    profiles = events[-1]["segments"]
    assert len(profiles) == len(expected)
    for profile, calls in zip(profiles, expected):
        bills = [alone(model, usage) for model, usage in calls]
        bill_in = bill_out = 0.0
        for b_in, b_out in bills:  # summed in call order, as the segment sums
            bill_in += b_in
            bill_out += b_out
        assert (profile["bill_in_usd"], profile["bill_out_usd"]) == (bill_in, bill_out)
        hand = [hand_bill(model, **usage) for model, usage in calls]
        assert math.isclose(profile["bill_in_usd"], math.fsum(h[0] for h in hand), rel_tol=1e-12, abs_tol=1e-15)
        assert math.isclose(profile["bill_out_usd"], math.fsum(h[1] for h in hand), rel_tol=1e-12, abs_tol=1e-15)
        # the per-model list: in order of first use, each model's calls and spend
        used = list(dict.fromkeys(model for model, _ in calls))
        listed = profile_models(profile)
        assert [m["model"] for m in listed] == used
        assert ("models" in profile) == (len(used) > 1)
        assert profile["model"] == used[0]
        for entry in listed:
            mine = [b for (model, _), b in zip(calls, bills) if model == entry["model"]]
            assert entry["calls"] == len(mine)
            assert math.isclose(entry["bill_in_usd"], math.fsum(b[0] for b in mine), rel_tol=1e-12, abs_tol=1e-15)
            assert math.isclose(entry["bill_out_usd"], math.fsum(b[1] for b in mine), rel_tol=1e-12, abs_tol=1e-15)
    # each call line names its own model and that model's price source
    lines = calls_of(events)
    flat = [model for calls in expected for model, _ in calls]
    assert [c["model"] for c in lines] == flat
    assert [c["price_source"] for c in lines] == [PRICES.lookup(m)[1] for m in flat]
    # rent and bill cycle: each call's rho is read from its own bill (no files read here, so B0 is the floor)
    flat_bills = [alone(model, usage)[0] for calls in expected for model, usage in calls]
    prev = None
    for line, bill_in in zip(lines, flat_bills):
        if prev is not None and prev["segment"] != line["segment"]:
            prev = None
        gate_open = line["cRatio"] > 0
        stock = line["totalStock"]
        rho = bill_in * max(0, stock - line["B_default"]) / stock if gate_open else 0.0
        assert math.isclose(line["bp"], rho, rel_tol=1e-12, abs_tol=1e-18)
        before, prev_rho = (prev["bill_cycle_usd"], prev["bp"]) if prev else (0.0, 0.0)
        added = (prev_rho + rho) / 2 if gate_open else 0.0
        assert math.isclose(line["bill_cycle_usd"] - before, added, rel_tol=1e-9, abs_tol=1e-15)
        prev = line


# ---- the reading of a switch ----------------------------------------------------------------------

def test_from_the_switch_call_on_the_sweet_spot_and_lamp_are_the_new_models():
    """Sonnet 4.5 (cRatio 0.08) to Opus 5.5 (cRatio 0.04) and back: at every call the valuation equals
    that of the same session run wholly on the call's model (same B, g and stock)."""
    plan = [SONNET] * 8 + [OPUS55] * 8 + [SONNET] * 6
    _, switched = run(T.switched_session(plan, reads=12))
    _, all_sonnet = run(T.switched_session([SONNET] * len(plan), reads=12))
    _, all_opus = run(T.switched_session([OPUS55] * len(plan), reads=12))
    valuation = ("cRatio", "x", "xSweet", "u", "dhat", "mf", "pp", "skeleton", "lamp", "g", "B", "B_default",
                 "totalStock", "floor")
    for i, (line, s, o) in enumerate(zip(calls_of(switched), calls_of(all_sonnet), calls_of(all_opus))):
        same = s if plan[i] == SONNET else o
        assert {k: line[k] for k in valuation} == {k: same[k] for k in valuation}, i
        assert line["cache"]["cold_rewrite_usd"] == same["cache"]["cold_rewrite_usd"]
        assert line["model"] == plan[i] and line["price_source"] == "table"
    lines = calls_of(switched)
    assert lines[7]["cRatio"] == PRICES.lookup(SONNET)[0].p_r / PRICES.lookup(SONNET)[0].p_w5
    assert lines[8]["cRatio"] == PRICES.lookup(OPUS55)[0].p_r / PRICES.lookup(OPUS55)[0].p_w5
    assert lines[8]["xSweet"] != lines[7]["xSweet"]


def test_a_switch_is_not_a_reset():
    plan = [SONNET] * 30 + [OPUS] * 30
    entries = T.switched_session(plan, growth=6000, reads=20)
    entries.insert(len(entries) - 20, T.prompt("now execute the plan", 400))
    eng, events = run(entries)
    assert not [e for e in events if e["event"] == "reset"]
    lines = calls_of(events)
    before, at = lines[29], lines[30]
    assert at["segment"] == before["segment"] == 0
    assert at["floor"] == before["floor"] and at["B"] >= before["B"] and at["B_default"] >= before["B_default"]
    assert at["laps"] >= before["laps"] and at["bill_cycle_usd"] > before["bill_cycle_usd"]
    assert [c["laps"] for c in lines] == sorted(c["laps"] for c in lines)  # nothing withdrawn, no lap rewound
    laps = [e["lap"] for e in events if e["event"] == "reminder"]
    assert laps == sorted(laps) and laps[0] < before["laps"] < laps[-1]  # reminders before and after the switch
    assert [c["turns"] for c in lines] == sorted(c["turns"] for c in lines) and lines[-1]["turns"] == 2
    assert [c["bill_cycle_usd"] for c in lines] == sorted(c["bill_cycle_usd"] for c in lines)
    assert len(events[-1]["segments"]) == 1


def test_the_switch_call_pays_its_rent_at_the_new_models_prices():
    plan = [SONNET] * 12 + [OPUS] * 3
    entries = T.switched_session(plan, reads=4)
    _, events = run(entries)
    lines = calls_of(events)
    prev, at = lines[11], lines[12]
    usage = next(e for e in entries if e.get("message", {}).get("id") == "m12")["message"]["usage"]
    stock = at["totalStock"]
    bill_in, _ = hand_bill(OPUS, usage["input_tokens"], usage["cache_creation_input_tokens"], 0,
                           usage["cache_read_input_tokens"], usage["output_tokens"])
    assert usage["cache_read_input_tokens"] == 0  # the whole prompt written anew
    # rho: the part of what the call paid for its prompt that carried dead weight; the call's B0 is the
    # B_default the line before it shows (printed when this call arrived, its tool results in)
    rho = bill_in * max(0, stock - prev["B_default"]) / stock
    assert math.isclose(at["bp"], rho, rel_tol=1e-12)
    assert math.isclose(at["bill_cycle_usd"] - prev["bill_cycle_usd"], (prev["bp"] + rho) / 2, rel_tol=1e-9)
    assert math.isclose(at["spend"]["bill_in_usd"] - prev["spend"]["bill_in_usd"], bill_in, rel_tol=1e-9)


def test_write_price_and_ttl_follow_the_current_models_cache():
    """Sonnet wrote 1-hour cache, Opus writes 5-minute: p_w is each model's own, and so is the TTL."""
    entries = [T.prompt("go", 0), T.call("a", 10, cw1h=30_000, model=SONNET),
               T.call("b", 20, cw1h=2_000, cr=30_003, model=SONNET),
               T.call("c", 30, cw5=32_003, model=OPUS),
               T.call("d", 40, cw5=1_000, cr=32_003, model=OPUS),
               T.call("e", 50, cw1h=2_000, cr=32_003, model=SONNET)]
    _, events = run(entries)
    lines = calls_of(events)
    sonnet, opus = PRICES.lookup(SONNET)[0], PRICES.lookup(OPUS)[0]
    assert lines[1]["cache"]["ttl_s"] == 3600 and lines[1]["cRatio"] == sonnet.p_r / sonnet.p_w1h
    assert lines[2]["cache"]["ttl_s"] == 300 and lines[2]["cRatio"] == opus.p_r / opus.p_w5
    assert lines[2]["cache"]["cold_rewrite_usd"] == opus.p_w5 * lines[2]["totalStock"]
    assert lines[3]["cache"]["ttl_s"] == 300
    assert lines[4]["cache"]["ttl_s"] == 3600 and lines[4]["cRatio"] == sonnet.p_r / sonnet.p_w1h


def test_an_unpriced_model_closes_the_gate_until_a_priced_one_returns():
    plan = [SONNET] * 6 + ["gpt-unknown"] * 3 + [SONNET] * 3
    _, events = run(T.switched_session(plan, reads=3))
    lines = calls_of(events)
    for line in lines[6:9]:
        assert line["price_source"] == "unknown" and line["cRatio"] == 0 and line["u"] is None
        assert line["lamp"]["state"] == "insufficient_data" and "gpt-unknown" in line["lamp"]["reason"]
        assert line["bill_cycle_usd"] == lines[5]["bill_cycle_usd"]  # no rent accrues while the gate is shut
        assert line["spend"] == lines[5]["spend"]  # no price: nothing billed
    assert lines[9]["lamp"]["state"] != "insufficient_data" and lines[9]["B_default"] >= lines[5]["B_default"]
    profile = events[-1]["segments"][0]
    assert [(m["model"], m["calls"], m["bill_in_usd"]) for m in profile["models"]][1] == ("gpt-unknown", 3, 0.0)


def test_file_tokens_after_a_switch_use_the_new_models_family_ratio():
    cfg = EngineConfig(ratios={"sonnet": 1.0, "opus": 1.5})
    text = "value = compute(x)\n" * 120
    entries = [T.prompt("go", 0),
               T.call("a", 10, cw5=20_000, model=SONNET, tools=[T.tool("r1", "Read", file_path=f"{T.CWD}/a.py")]),
               T.result("r1", text, 11),
               T.call("b", 20, cw5=23_000, model=OPUS, tools=[T.tool("r2", "Read", file_path=f"{T.CWD}/b.py")]),
               T.result("r2", text, 21)]
    eng, _ = run(entries, cfg)
    rows = {r["path"]: r["tokens"] for r in eng.path_rows()}
    raw = eng.counter.count(text)
    assert rows[f"{T.CWD}/a.py"] == raw and rows[f"{T.CWD}/b.py"] == math.ceil(raw * 1.5)


def test_profile_names_the_opening_model_and_lists_every_model_used():
    plan = [SONNET] * 4 + [OPUS] * 3 + [SONNET] * 2
    _, events = run(T.switched_session(plan) + [T.compact(500), T.call("z", 510, cw5=25_000, model=OPUS)])
    first, second = events[-1]["segments"]
    assert first["model"] == SONNET and [(m["model"], m["calls"]) for m in first["models"]] == [(SONNET, 6), (OPUS, 3)]
    assert math.isclose(sum(m["bill_in_usd"] for m in first["models"]), first["bill_in_usd"], rel_tol=1e-12)
    assert math.isclose(sum(m["bill_out_usd"] for m in first["models"]), first["bill_out_usd"], rel_tol=1e-12)
    assert second["model"] == OPUS and "models" not in second  # one model: the profile's own fields
    assert profile_models(second) == [{"model": OPUS, "calls": 1, "bill_in_usd": second["bill_in_usd"],
                                       "bill_out_usd": second["bill_out_usd"]}]


# ---- stored profiles --------------------------------------------------------------------------------

def test_the_store_keeps_each_models_calls_and_spend_and_reads_old_rows_as_their_one_model(tmp_path):
    import models
    from models.migrations import load_migrations
    from service.store import Store

    path = tmp_path / "ctxlamp.db"
    db = models.open_database(path)
    steps = load_migrations()
    before = steps[:[m.__name__ for _, m in steps].index("models.migrations.0003_segment_models")]
    models.migrate(db, before)  # a database of before 0003, with one profile in it
    db.execute_sql("INSERT INTO segment_profile (session_id, segment, model, calls, turns, bill_in_usd, "
                   "bill_out_usd, laps, archived_at) VALUES ('old', 0, 'claude-sonnet-4-5', 4, 1, 0.5, 0.1, 0, 'x')")
    db.close()
    store = Store(path)  # migrates to the newest schema
    try:
        _, events = run(T.switched_session([SONNET] * 3 + [OPUS] * 2 + [SONNET]))
        store.sessions.archive_profile(events[-1]["segments"][0])
        stored = {p["session_id"]: p for p in store.sessions.segments()}
        assert stored[T.SID]["models"] == events[-1]["segments"][0]["models"]
        assert [(m["model"], m["calls"]) for m in stored[T.SID]["models"]] == [(SONNET, 4), (OPUS, 2)]
        assert stored["old"]["models"] == [{"model": SONNET, "calls": 4, "bill_in_usd": 0.5, "bill_out_usd": 0.1}]
    finally:
        store.close()


# ---- golden: a session of our own, written by the real CLI against our fake API ----------------------


def test_a_call_that_names_no_model_is_the_current_models():
    entries = T.switched_session([OPUS] * 4)
    del entries[3]["message"]["model"]
    _, events = run(entries)
    lines = calls_of(events)
    assert [c["model"] for c in lines] == [OPUS] * 4 and lines[2]["price_source"] == "table"
    assert "models" not in events[-1]["segments"][0]
