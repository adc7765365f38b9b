"""`ctxlamp status` says which part of its start the service is in (the headless live status)."""
import pytest

from service.cli.status import render


@pytest.mark.parametrize("scan, shown", [
    ({"state": "catching_up", "done": 2, "total": 5}, "reading recent sessions 2/5"),
    ({"state": "scanning", "done": 3, "total": 9}, "reading older sessions 3/9"),
    ({"state": "scanning", "done": 9, "total": 9}, "preparing the report"),
    ({"state": "scanning", "done": 0, "total": 0}, "preparing the report"),  # no history to scan
])
def test_the_head_names_the_phase_of_the_start(scan, shown):
    head = render({"service": {"pid": 7, "observer": "inotify", "scan": scan}}, tty=False).splitlines()[0]
    assert head.endswith(" · " + shown)


def test_an_idle_service_names_no_phase():
    head = render({"service": {"pid": 7, "observer": "inotify", "scan": {"state": "idle", "done": 0, "total": 0}}},
                  tty=False).splitlines()[0]
    assert head == "ctxlamp: 0 live sessions (service pid 7)"


def test_the_table_heads_its_rent_columns_in_the_trays_words():
    """The tray's tooltip says "rent so far $0.21 · $0.45 per hour"; the terminal's two columns said "rent" and
    "per hour" side by side, which read as one heading ("rent per hour") over two amounts."""
    snap = {"session_id": "s", "project": "/home/dev/webshop", "lamp": {"colour": "green", "state": "good"},
            "bill_cycle_usd": 0.21, "br": 0.45, "laps": 0, "started_at": "2026-11-30T09:00:00Z",
            "updated_at": "2026-11-30T10:00:00Z"}  # an hour of calls: the rate is shown (issue 51)
    head, row = render({"service": {"pid": 7}, "sessions": [snap], "followed": "s"}, tty=False).splitlines()[1:3]
    assert "rent so far" in head and "per hour" in head
    assert row.index("$0.21") + len("$0.21") == head.index("rent so far") + len("rent so far")  # right-aligned
    assert row.index("$0.45") + len("$0.45") == head.index("per hour") + len("per hour")
