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
