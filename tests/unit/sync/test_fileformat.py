"""A device file read from another device (service/sync/fileformat.py, folder.py): every figure in its
range, a bad file refused whole with its reason, a sync tool's copies named and never read."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from service.sync import folder as shared
from service.sync.fileformat import CHANNEL_COLUMNS, RESTART_COLUMNS, SPEND_COLUMNS, BadFile, decode, encode
from tests.support.sync_files import ID, KEY, good

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
    ("channels", 5, float("nan")), ("channels", 1, -3),
]


@pytest.mark.parametrize("part,index,value", BAD)
def test_a_figure_out_of_its_range_refuses_the_file(part, index, value):
    doc = good().doc()
    doc["sessions"][KEY][part][0][index] = value
    with pytest.raises(BadFile):  # NaN and infinity are no JSON: refused as a file that does not parse
        decode(json.dumps(doc).encode())


@pytest.mark.parametrize("change,why", [
    (lambda d: d.update(version=2), "version 2"),
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
