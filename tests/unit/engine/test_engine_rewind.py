"""Rewinds: the stock follows the live branch of the conversation (issue 21), as hypothesis properties.

Transcripts are built with Claude Code's topology (uuid / parentUuid, parallel tool results hanging
off their own tool_use entry, compactions with a null parent). A rewind is a new prompt whose parent is
the entry before an earlier prompt; a re-entry continues from a leaf of a branch left before.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.engine import LineSplitter
from service.engine_setup.engines import load_prices, new_engine
from tests.support import transcripts as T

PRICES = load_prices()
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PATHS = [f"{T.CWD}/src/m{i}.py" for i in range(4)]
Branching = T.Branching


# Step kinds (repeats weigh the draw) and the range of each kind's size argument.
KINDS = ["prompt", "prompt", "rewind", "rewind", "call", "read", "edit", "write", "parallel", "reenter", "echo",
         "bare_read", "compact"]
SIZES = {"read": (1, 80), "edit": (0, 40), "write": (1, 40), "parallel": (1, 50), "bare_read": (1, 30)}
step = st.sampled_from(KINDS).flatmap(
    lambda kind: st.tuples(st.just(kind), st.integers(0, 20), st.integers(*SIZES.get(kind, (0, 0)))))
sessions = st.lists(step, min_size=1, max_size=30)


def build(steps, revisions=False, seed=0, compact=True) -> list[dict]:
    b = Branching(revisions, seed)
    for kind, a, n in steps:
        path = PATHS[a % len(PATHS)]
        if kind == "prompt":
            b.prompt("next")
        elif kind == "call":
            b.call()
        elif kind == "read":
            b.read(path, n)
        elif kind == "bare_read":  # an older client's entries: no uuid, no parent
            b.read(path, n, uuid=False)
        elif kind == "edit":
            b.tool("Edit", file_path=path, old_string="v = 1\n" * n, new_string="w = 22\n" * (40 - n))
        elif kind == "write":
            b.tool("Write", file_path=path, content="x = 3\n" * n)
        elif kind == "parallel":
            b.parallel(path, PATHS[(a + 1) % len(PATHS)], n)
        elif kind == "rewind":
            b.rewind(a)
        elif kind == "reenter":
            b.reenter(a)
        elif kind == "echo":
            b.echo()
        elif compact:
            b.compact()
    b.call()  # the last call: the figures are compared right after it
    return b.entries


def live_branch_alone(entries: list[dict]) -> list[dict]:
    """The same file with the abandoned entries removed: the chain from the last entry back to the
    root (the latest compaction's), the results of the chain's parallel tool calls, and the
    entries without a uuid written while the chain's entry before them was the latest."""
    by_uuid = {e["uuid"]: e for e in entries if "uuid" in e}
    live, node = set(), next(e for e in reversed(entries) if "uuid" in e)["uuid"]
    while node is not None:
        live.add(node)
        node = by_uuid[node].get("parentUuid")
    live |= {e["uuid"] for e in entries if "uuid" in e and e.get("parentUuid") in live
             and e["type"] == "user" and isinstance(e["message"]["content"], list)}
    kept, latest = [], None
    for e in entries:
        if "uuid" in e:
            latest = e["uuid"]
        if e.get("uuid", latest) in live:
            kept.append(e)
    return kept


def feed(entries, engine=None):
    eng = engine or new_engine("/tmp/rewind.jsonl", PRICES)
    for line in T.to_bytes(entries).splitlines():
        eng.feed_line(line)
    return eng


def stock_state(eng) -> dict:
    snap = eng.snapshot(with_curve=False)
    return {"B_default": eng.b_default(), "B_all": eng.b_all(), "D": snap["D"], "floor": snap["floor"],
            "paths": eng.path_rows()}


@SETTINGS
@given(sessions)
def test_B_after_the_last_call_is_B_of_the_live_branch_alone(steps):
    entries = build(steps)
    full = feed(entries)
    alone = feed(live_branch_alone(entries))
    assert stock_state(full) == stock_state(alone)


@SETTINGS
@given(sessions)
def test_a_rewind_is_not_a_reset_and_spend_counts_every_billed_call(steps):
    entries = build(steps)
    eng = new_engine("/tmp/rewind.jsonl", PRICES)
    flat = new_engine("/tmp/rewind.jsonl", PRICES)  # the same file with no topology at all
    for entry in entries:
        before = eng.snapshot(with_curve=False)
        rewinds = len(eng.rewinds)
        eng.feed_line(T.to_bytes([entry]).strip())
        bare = {k: v for k, v in entry.items() if k not in ("uuid", "parentUuid")}
        flat.feed_line(T.to_bytes([bare]).strip())
        if len(eng.rewinds) > rewinds:
            after = eng.snapshot(with_curve=False)
            for name in ("g", "turns", "calls", "laps", "wallet_phase", "bill_cycle_usd", "spend", "segment",
                         "totalStock", "L", "L_peak", "reminder"):
                assert after[name] == before[name], name
            assert after["rewinds"] == before["rewinds"] + 1
    mine, theirs = eng.snapshot(with_curve=False), flat.snapshot(with_curve=False)
    for name in ("spend", "calls", "turns", "segment", "g", "totalStock", "L_peak"):
        assert mine[name] == theirs[name], name
    assert flat.rewinds == []


@SETTINGS
@given(sessions, st.integers(0, 1000))
def test_folding_with_rewinds_keeps_keys_spend_and_stock(steps, seed):
    plain, folded = build(steps), build(steps, revisions=True, seed=seed)
    a, b = feed(plain), feed(folded)
    a.finish()
    b.finish()
    ev_a, ev_b = a.drain_events(), b.drain_events()
    assert [e["key"] for e in ev_a if e["event"] == "call"] == [e["key"] for e in ev_b if e["event"] == "call"]
    assert ev_a[-1]["status"]["spend"] == ev_b[-1]["status"]["spend"]
    assert stock_state(a) == stock_state(b)
    assert len(a.rewinds) == len(b.rewinds)


@SETTINGS
@given(sessions, st.data())
def test_sidechain_copies_and_corrupt_lines_change_nothing_with_rewinds(steps, data):
    entries = build(steps)
    noisy = T.with_sidechain_copies(entries, data.draw)
    clean = feed(entries)
    eng = new_engine("/tmp/rewind.jsonl", PRICES)
    lines = T.to_bytes(noisy).splitlines()
    garbage = data.draw(st.lists(st.integers(0, len(lines)), max_size=5))
    for i in sorted(garbage, reverse=True):
        lines.insert(i, b'{"type": "user", "uuid": "torn' + bytes([0xff]))
    for line in lines:
        eng.feed_line(line)
    clean.finish()
    eng.finish()
    a, b = clean.drain_events(), eng.drain_events()
    assert eng.skipped_lines == len(garbage)
    for ev in a + b:
        ev.pop("skipped_lines", None)
        if "status" in ev:
            ev["status"].pop("skipped_lines", None)
    assert a == b


@SETTINGS
@given(sessions, st.lists(st.integers(1, 4000), min_size=1, max_size=30))
def test_live_tail_in_chunks_equals_replay_with_rewinds(steps, cuts):
    data = T.to_bytes(build(steps))
    whole = new_engine("/tmp/rewind.jsonl", PRICES, full_events=False)
    for line in data.splitlines():
        whole.feed_line(line)
    tailed = new_engine("/tmp/rewind.jsonl", PRICES, full_events=False)
    splitter, pos = LineSplitter(), 0
    for cut in cuts + [len(data)]:
        for line in splitter.feed(data[pos:pos + cut]):
            tailed.feed_line(line)
        pos += cut
    for line in splitter.feed(data[pos:]):
        tailed.feed_line(line)
    whole.finish()
    tailed.finish()
    assert json.dumps(whole.drain_events(), sort_keys=True) == json.dumps(tailed.drain_events(), sort_keys=True)
    assert whole.live_series() == tailed.live_series() and whole.rewinds == tailed.rewinds


def test_a_rewind_drops_the_read_and_a_reentry_brings_it_back_whole():
    b = Branching()
    b.read_turn(PATHS[0], 500)
    base = feed(b.entries).b_default()
    b.rewind(0)  # before "read it"
    b.call()
    eng = feed(b.entries)
    assert len(eng.rewinds) == 1
    dropped = base - eng.b_default()
    assert dropped > 400 and eng.path_rows() == []
    b.reenter(0)
    b.call()
    eng = feed(b.entries)
    assert eng.b_default() == base and len(eng.rewinds) == 2
    events = [e for e in eng.drain_events() if e["event"] == "rewind"]
    assert events[0]["B_default_before"] - events[0]["B_default"] == dropped
    assert events[1]["B_default"] - events[1]["B_default_before"] == dropped


def test_parallel_results_and_command_echoes_are_not_rewinds():
    b = Branching()
    b.prompt("two at once")
    b.parallel(PATHS[0], PATHS[1], 30)
    b.echo()
    b.call()
    eng = feed(b.entries)
    assert eng.rewinds == []
    assert {r["path"] for r in eng.path_rows()} == {PATHS[0], PATHS[1]}


def test_entries_without_topology_never_rewind():
    entries = build([("read", 0, 30), ("rewind", 0, 0), ("read", 1, 30), ("rewind", 1, 0)])
    bare = [{k: v for k, v in e.items() if k not in ("uuid", "parentUuid")} for e in entries]
    eng = feed(bare)
    assert eng.rewinds == [] and eng.snapshot()["rewinds"] == 0


def _link(kind: str, t: float) -> dict:
    return {"parentUuid": None, "isSidechain": False, "type": kind, "timestamp": T.ts(t)}


def test_an_attachment_can_open_a_rewind_but_a_progress_entry_cannot():
    b = Branching()
    b.read_turn(PATHS[0], 300)
    start = b.prompts[0]["parentUuid"]
    progress = b.entries + [b._add(_link("progress", 500), parent=start)]
    eng = feed(progress)
    assert eng.rewinds == [] and [r["path"] for r in eng.path_rows()] == [PATHS[0]]
    b.entries.pop()
    b.tip = b.entries[-1]["uuid"]
    b._add(_link("attachment", 600), parent=start)  # a resume at an earlier message: a hook's attachment first
    b.prompt("from there")
    b.call()
    eng = feed(b.entries)
    assert len(eng.rewinds) == 1 and eng.path_rows() == []
