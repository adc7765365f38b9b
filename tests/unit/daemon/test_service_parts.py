"""The service's parts on their own: config, lock, tail, checkpoints, SSE hub, path rules."""
from __future__ import annotations

import json
import os
import stat
import tomllib

import pytest
from hypothesis import given, settings, strategies as st

from service import config
from service.api.sse import QUEUE_SIZE, Hub
from service.daemon import checkpoint
from service.daemon.lock import AlreadyRunning, ServiceLock, is_held
from service.ingest.live import classify
from service.ingest.tail import FileTail


# ---- config ------------------------------------------------------------------------------
def test_first_run_writes_every_default_commented_out(tmp_path):
    path = tmp_path / "config.toml"
    cfg = config.load(path)
    assert cfg == config.DEFAULTS
    text = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert tomllib.loads(text) == {k: {} for k in config.DEFAULTS}  # nothing active: all commented
    for section, keys in config.DEFAULTS.items():
        assert f"[{section}]" in text
        for key in keys:
            assert f"# {key}" in text


def test_merge_persists_changes_and_keeps_defaults_commented(tmp_path):
    path = tmp_path / "config.toml"
    cfg = config.load(path)
    new = config.merge(cfg, {"engine": {"g_floor": 800}, "selection": {"exclude": ["**/vendor/**"]},
                             "tokenizer": {"ratio": {"sonnet": 1.12}}, "reminders": {"min_gap": "1h"}})
    config.save(path, new)
    again = config.load(path)
    assert again["engine"] == {"g_floor": 800, "eps_amber": 0.05, "eps_crit": 0.20}
    assert again["selection"]["exclude"] == ["**/vendor/**"]
    assert again["tokenizer"]["ratio"] == {"sonnet": 1.12}
    assert again["reminders"]["min_gap"] == "1h"
    assert "# eps_amber = 0.05" in path.read_text()


@pytest.mark.parametrize("bad", [
    {"engine": {"g_floor": "big"}}, {"engine": {"nope": 1}}, {"nosection": {}},
    {"history": {"store_prompts": 1}}, {"reminders": {"min_gap": "soon"}},
    {"selection": {"exclude": "x"}}, {"tokenizer": {"ratio": {"sonnet": -1}}}, {"engine": {"eps_crit": -0.1}},
])
def test_merge_rejects_wrong_values(bad):
    with pytest.raises(config.ConfigError):
        config.merge(config.DEFAULTS, bad)


def test_a_broken_file_is_reported_not_overwritten(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[engine\n")
    with pytest.raises(config.ConfigError):
        config.load(path)
    assert path.read_text() == "[engine\n"


@settings(max_examples=50, deadline=None)
@given(exclude=st.lists(st.text(min_size=1, max_size=20).filter(lambda s: not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in s)), max_size=4),
       g=st.integers(min_value=1, max_value=10**6))
def test_written_config_reads_back_the_same(tmp_path_factory, exclude, g):
    path = tmp_path_factory.mktemp("cfg") / "config.toml"
    cfg = config.merge(config.DEFAULTS, {"selection": {"exclude": exclude}, "engine": {"g_floor": g}})
    config.save(path, cfg)
    assert config.load(path) == cfg


# ---- lock ----------------------------------------------------------------------------------
def test_second_lock_names_the_owner(tmp_path):
    from service.daemon.lock import lock_kind

    if lock_kind() == "socket":  # no fcntl or msvcrt here (the portable CI leg): that lock opens a socket
        pytest.skip("the socket lock is tested with real processes in tests/integration/daemon/test_platform_lock.py")
    path = tmp_path / "service.lock"
    first = ServiceLock(path).acquire()
    try:
        assert is_held(path)
        with pytest.raises(AlreadyRunning) as err:
            ServiceLock(path).acquire()
        assert err.value.pid == os.getpid()
    finally:
        first.release()
    assert not is_held(path)
    ServiceLock(path).acquire().release()  # free again


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="no O_NOFOLLOW on this system")
def test_the_lock_file_is_never_opened_through_a_planted_link(tmp_path):
    from service.daemon.lock import LockUnavailable, lock_kind

    if lock_kind() == "socket":
        pytest.skip("the socket lock is tested with real processes in tests/integration/daemon/test_platform_lock.py")
    victim = tmp_path / "victim.txt"
    victim.write_text("another user's file")
    (tmp_path / "service.lock").symlink_to(victim)
    with pytest.raises(LockUnavailable, match="is a link"):
        ServiceLock(tmp_path / "service.lock").acquire()
    assert victim.read_text() == "another user's file"


# ---- tail ----------------------------------------------------------------------------------
def test_tail_reads_appends_and_starts_over_on_shrink_or_new_inode(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\ntw")
    tail = FileTail(path)
    assert tail.read().data == b"one\ntw"
    with open(path, "ab") as fh:
        fh.write(b"o\n")
    c = tail.read()
    assert (c.data, c.restart) == (b"o\n", False)
    assert tail.read().data == b""
    path.write_bytes(b"x\n")  # truncated and rewritten: shorter than the offset
    c = tail.read()
    assert (c.data, c.restart) == (b"x\n", True)
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"x\ny\nz\n")
    os.replace(other, path)  # same name, new inode
    c = tail.read()
    assert (c.data, c.restart) == (b"x\ny\nz\n", True)
    path.unlink()
    assert tail.read().missing


def test_tail_reads_a_large_file_in_bounded_chunks(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"a" * 2500)
    tail = FileTail(path)
    parts = []
    while True:
        c = tail.read(limit=1000)
        parts.append(c.data)
        if not c.more:
            break
    assert [len(p) for p in parts] == [1000, 1000, 500]


# ---- checkpoints ------------------------------------------------------------------------------
def test_checkpoints_keep_three_and_skip_a_corrupted_newest(tmp_path):
    for n in range(5):
        checkpoint.write(tmp_path, {"s": {"laps": n}})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["ledger-3.json", "ledger-4.json", "ledger-5.json"]
    assert all(stat.S_IMODE((tmp_path / n).stat().st_mode) == 0o600 for n in names)
    doc, rejected = checkpoint.load_latest(tmp_path)
    assert doc["sessions"]["s"]["laps"] == 4 and rejected == []
    newest = tmp_path / "ledger-5.json"
    newest.write_bytes(newest.read_bytes()[:40])  # torn
    doc, rejected = checkpoint.load_latest(tmp_path)
    assert doc["n"] == 4 and rejected == ["ledger-5.json"]
    middle = tmp_path / "ledger-4.json"
    tampered = json.loads(middle.read_text())
    tampered["sessions"]["s"]["laps"] = 99  # valid JSON, wrong checksum
    middle.write_text(json.dumps(tampered))
    doc, rejected = checkpoint.load_latest(tmp_path)
    assert doc["n"] == 3 and rejected == ["ledger-5.json", "ledger-4.json"]


def test_no_usable_checkpoint_means_a_fresh_ledger(tmp_path):
    assert checkpoint.load_latest(tmp_path) == (None, [])
    (tmp_path / "ledger-1.json").write_text("{}")
    assert checkpoint.load_latest(tmp_path) == (None, ["ledger-1.json"])


# ---- SSE hub ---------------------------------------------------------------------------------
def test_hub_fans_out_and_drops_a_client_that_falls_behind():
    hub = Hub()
    fast, slow = hub.subscribe(), hub.subscribe()
    for i in range(QUEUE_SIZE):  # both queues exactly full
        hub.publish("snapshot", {"i": i})
    got = [fast.next() for _ in range(QUEUE_SIZE)]
    assert got[0] == b'event: snapshot\ndata: {"i":0}\n\n'
    hub.publish("reminder", {"lap": 1})  # the slow client has no room: dropped, the publisher never waits
    assert fast.next() == b'event: reminder\ndata: {"lap":1}\n\n'
    assert slow.dropped and hub.client_count == 1
    assert slow.next() is None  # its stream ends; it reconnects for a fresh state
    hub.close_all()
    assert fast.next() is None and hub.client_count == 0


# ---- which files are sessions ------------------------------------------------------------------
def test_only_main_transcripts_are_sessions(tmp_path):
    root = tmp_path / "projects"
    assert classify(root / "-p" / "abc.jsonl", root) == "session"
    assert classify(root / "-p" / "agent-1.jsonl", root) == "subagent"
    assert classify(root / "-p" / "abc" / "subagents" / "agent-2.jsonl", root) == "subagent"
    assert classify(root / "-p" / "abc" / "subagents" / "agent-2.meta.json", root) is None
    assert classify(root / "abc.jsonl", root) is None
    assert classify(tmp_path / "elsewhere" / "-p" / "abc.jsonl", root) is None


# ---- the API's view of the service ---------------------------------------------------------
def test_the_api_imports_nothing_of_the_daemon():
    """service/api/ reads the service through service/api/reads.py, never its modules (lazy imports too)."""
    import ast
    from pathlib import Path

    import service.api as api

    found = []
    for py in Path(api.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"), str(py))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(py.name, n) for n in names if n == "service.daemon" or n.startswith("service.daemon.")]
    assert found == []


def test_the_snapshot_type_names_every_field_the_engine_publishes():
    """The engine's real snapshot, its TypedDict and the OpenAPI schema made from it carry the same fields."""
    from typing import get_args, get_type_hints

    from service.api.openapi import SCHEMAS
    from service.client.payloads import Lamp, Snapshot
    from service.engine_setup.engines import load_prices, replay_file
    from tests.support.corpus import CC

    path = next((CC / "model-switch" / "projects").glob("*/*.jsonl"))
    end = [e for e in replay_file(path, load_prices()) if e["event"] == "end"][-1]
    published = set(end["status"])
    assert published == set(get_type_hints(Snapshot)) == set(SCHEMAS["Snapshot"]["properties"])
    assert end["status"]["lamp"]["colour"] in get_args(get_type_hints(Lamp)["colour"])
