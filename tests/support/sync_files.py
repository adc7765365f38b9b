"""A valid device file of the sync folder (service/sync/fileformat.py), for the tests that change or seal it."""
from __future__ import annotations

from service.sync.fileformat import CHANNEL_COLUMNS, RESTART_V1, DeviceFile, SessionFigures, columns, session_key

ID = "0123456789abcdef0123456789abcdef"
KEY = session_key("8e9f0a1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b")


def good() -> DeviceFile:
    spend = ["2026-11-30", "claude-opus-4-5", "1a2b3c4d5e6f7a8b", 3, 3, 0, 10, 20, 30, 40, 0.5, 0.25, 0.0, 0.1]
    restart = ["2026-11-30", 0.2, -0.05, -0.1, 0.3, 0.0, 1, 1, 0, 2, 1, 0.4, 0.35, -0.02, 1, 2, 0, 1]
    channels = ["2026-11-30"] + [1] * (len(CHANNEL_COLUMNS) - 1)
    compactions = ["2026-11-30", 1, 0, 1, 0, 0.01, 0.05, 0.0, 0.0, 0.02, 0.08]
    return DeviceFile(ID, "laptop", "2026-12-01T10:00:00Z", "hash",
                      {KEY: SessionFigures("2026-11-30T10:00:00.000Z", [spend], [restart], [channels], [compactions])})


def version_1(device: DeviceFile) -> dict:
    """`device` as a ctxlamp before schedules and compactions wrote it (sync format 1)."""
    doc = device.doc()
    doc["version"] = 1
    doc["columns"] = columns(1)
    for s in doc["sessions"].values():
        s["restart"] = [row[:len(RESTART_V1)] for row in s["restart"]]
        del s["compactions"]
    return doc
