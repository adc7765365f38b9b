"""A device file read from another device (service/sync/fileformat.py, folder.py): every figure in its
range, a bad file refused whole with its reason, a sync tool's copies named and never read."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from service.sync import folder as shared
from service.sync.fileformat import (
    CHANNEL_COLUMNS, RESTART_COLUMNS, RESTART_V1, SPEND_COLUMNS, BadFile, decode, encode,
)
from tests.support.sync_files import ID, KEY, good, version_1

def test_a_file_reads_back_as_written():
    data = encode(good())
    assert decode(data).doc() == good().doc()
    assert b"8e9f0a1b" not in data  # the session id itself never reaches the folder


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10 ** 6))
def test_a_torn_file_is_refused_and_says_so(cut):
    data = encode(good())
    cut = cut % len(data)
    with pytest.raises(BadFile, match="torn|not a ctxlamp"):
        decode(data[:cut])


BAD = [
    ("spend", 0, "1970-13-01"), ("spend", 0, 20261130), ("spend", 1, "model\u202e"), ("spend", 2, "x" * 201),
    ("spend", 3, -1), ("spend", 3, 2 ** 53 + 1), ("spend", 3, 1.5), ("spend", 6, True), ("spend", 10, -0.01),
    ("spend", 10, float("inf")), ("spend", 10, 1e10), ("spend", 13, "0.1"),
    ("restart", 2, -1e10), ("restart", 1, -0.5), ("restart", 6, -1),
    ("restart", 11, -0.5), ("restart", 13, -1e10), ("restart", 14, 1.5), ("restart", 10, "1"),
    ("channels", 5, float("nan")), ("channels", 1, -3),
    ("compactions", 1, -1), ("compactions", 3, 0.5), ("compactions", 5, -0.01), ("compactions", 10, 1e10),
]


@pytest.mark.parametrize("part,index,value", BAD)
def test_a_figure_out_of_its_range_refuses_the_file(part, index, value):
    doc = good().doc()
    doc["sessions"][KEY][part][0][index] = value
    with pytest.raises(BadFile):  # NaN and infinity are no JSON: refused as a file that does not parse
        decode(json.dumps(doc).encode())


@pytest.mark.parametrize("change,why", [
    (lambda d: d.update(version=3), "version 3"),
    (lambda d: d.update(version=True), "version True"),
    (lambda d: d.update(format="other"), "not a ctxlamp"),
    (lambda d: d["device"].update(id="../../etc"), "no device id"),
    (lambda d: d.update(written_at="yesterday"), "not a time"),
    (lambda d: d.update(written_at="2026-12-01T10:00:00"), "no time zone"),
    (lambda d: d["columns"]["spend"].reverse(), "columns"),
    (lambda d: d["sessions"].update({"not-a-hash": d["sessions"][KEY]}), "not a hash"),
    (lambda d: d["sessions"][KEY]["spend"][0].append(1), "width"),
])
def test_a_file_of_another_shape_is_refused_with_its_reason(change, why):
    doc = good().doc()
    change(doc)
    with pytest.raises(BadFile, match=why):
        decode(json.dumps(doc).encode())


def test_a_file_an_older_ctxlamp_wrote_still_counts_without_schedules_or_compactions():
    """A device not yet updated (format 1) keeps counting: its spend and restart figures sum, its rows
    carry no schedule (0 segments with one), and the report says which device is older."""
    from desktop.present.overview import device_rows
    from service.sync.merge import merge
    from service.sync.report import device_lines
    from service.sync.view import devices_block, merged_summary, utc_now

    old = decode(json.dumps(version_1(good())).encode())
    new = good()
    assert old.version == 1 and new.version == 2
    s_old, s_new = old.sessions[KEY], new.sessions[KEY]
    assert s_old.spend == s_new.spend and s_old.compactions == []
    assert s_old.restart[0][:len(RESTART_V1)] == s_new.restart[0][:len(RESTART_V1)]
    assert s_old.restart[0][len(RESTART_V1):] == [0] * (len(RESTART_COLUMNS) - len(RESTART_V1))
    local = {"spend": {"billed": {}}, "restart_savings": {"schedule": {}}, "compactions": {}, "edit": {},
             "pinch": {}, "retrieval": {}, "period": {}}
    for device, schedules, compacted in ((old, 0, 0), (new, 1, 2)):
        merged = merge([device])
        devices = devices_block(merged, "f" * 32, utc_now(), 3600.0)
        out = merged_summary(local, merged, devices, [], "all")
        assert out["restart_savings"]["rent_usd"] == 0.2
        assert out["restart_savings"]["schedule"]["segments"] == schedules
        assert out["compactions"]["count"] == compacted
        assert [d["older"] for d in devices] == [device is old]
        text = "\n".join(device_lines(out))
        assert ("ctxlamp is older" in text) is (device is old) and max(map(len, text.splitlines())) <= 80
        tip = device_rows({"on": True, "devices": devices})[0].tip  # the Overview's device table
        assert ("ctxlamp is older" in tip) is (device is old)


def test_schedules_and_compactions_sum_across_devices():
    """Two devices' schedules and compactions: the sums, the schedule's capture recomputed from them."""
    from dataclasses import replace

    from service.sync.merge import merge
    from service.sync.view import devices_block, merged_summary, utc_now

    other = replace(good(), id="f" * 32, name="desktop",
                    sessions={"a" * 32: good().sessions[KEY]})
    merged = merge([good(), other])
    local = {"spend": {"billed": {}}, "restart_savings": {"schedule": {"label": "kept"}}, "compactions": {},
             "edit": {}, "pinch": {}, "retrieval": {}, "period": {}}
    out = merged_summary(local, merged, devices_block(merged, ID, utc_now(), 3600.0), [], "all")
    plan = out["restart_savings"]["schedule"]
    assert plan["best_usd"] == 0.8 and plan["followed_usd"] == -0.04 and plan["capture"] == -0.05
    assert (plan["segments"], plan["restarts_best"], plan["compactions_best"], plan["label"]) == (2, 4, 2, "kept")
    c = out["compactions"]
    assert c["by_trigger"] == {"manual": 2, "auto": 0, "idle": 2} and c["count"] == 4
    assert c["cost_range_usd"] == {"low": 0.06, "high": 0.26} and c["cost_usd"] == 0.16
    assert c["cost_usd_by_trigger"] == {"manual": 0.06, "auto": 0.0, "idle": 0.1}
    assert "compactions.by_session" in out["sync"]["this_device_only"]


def test_columns_are_the_format_s():
    assert SPEND_COLUMNS[:3] == ("day", "model", "project") and RESTART_COLUMNS[0] == CHANNEL_COLUMNS[0] == "day"


def test_the_folder_reads_device_files_and_names_each_copy(tmp_path):
    shared.write(tmp_path, good())
    whole = (tmp_path / shared.file_name(ID)).read_bytes()
    copies = {
        f"ctxlamp-device-{ID} (Alice's conflicted copy 2026-12-01).json": "Dropbox",
        f"ctxlamp-device-{ID}.sync-conflict-20261201-101010-ABCDEFG.json": "Syncthing",
        f"ctxlamp-device-{ID}-DESKTOP-7.json": "OneDrive",
        f"ctxlamp-device-{ID} 2.json": "iCloud",
    }
    for name in copies:
        (tmp_path / name).write_bytes(whole)
    (tmp_path / f"ctxlamp-device-{'e' * 32}.json").write_bytes(whole)  # a name that is not its id
    (tmp_path / f".ctxlamp-device-{ID}.json.123-456.tmp").write_bytes(whole[:10])  # a write under way
    (tmp_path / "notes.txt").write_text("the user's own file")
    reading = shared.read(tmp_path)
    assert [d.id for d in reading.devices] == [ID]
    named = dict(reading.skipped)
    for name, tool in copies.items():
        assert tool in named[name]
    assert "differ" in named[f"ctxlamp-device-{'e' * 32}.json"]
    assert len(named) == len(copies) + 1


def test_the_folder_never_reads_through_a_link(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_bytes(encode(good()))
    (tmp_path / shared.file_name(ID)).symlink_to(target)
    reading = shared.read(tmp_path)
    assert reading.devices == [] and "cannot be read" in dict(reading.skipped)[shared.file_name(ID)]


json_values = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(max_size=50),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=4), max_leaves=10)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_any_changed_value_is_refused_or_read_in_range_and_sums(data):
    """Another device's file with any one value replaced by any JSON value: refused with BadFile, or read
    and summed into a report without an exception and with finite money."""
    import math

    from service.sync.merge import merge
    from service.sync.view import devices_block, merged_summary, utc_now

    doc = good().doc()
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    value = data.draw(json_values)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    try:
        raw = json.dumps(doc).encode()
    except ValueError:
        return
    try:
        device = decode(raw)
    except BadFile:
        return
    merged = merge([device])
    local = {"spend": {"billed": {}}, "restart_savings": {}, "edit": {"str_replace_misses": {}}, "pinch": {},
             "retrieval": {}, "period": {}}
    out = merged_summary(local, merged, devices_block(merged, ID, utc_now(), 3600.0), [], "all")
    assert math.isfinite(out["spend"]["billed"]["usd"]) and math.isfinite(out["restart_savings"]["rent_usd"])
