"""The scan's forked workers: every result once, failures reported, no process left behind."""
from __future__ import annotations

import os
import signal
import time

import pytest

from service.report import forked
from tests.support.procs import children_of, no_children_left

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="needs os.fork")


def _square_with_pid(n: int) -> tuple[int, int, int]:
    return n, n * n, os.getpid()


def test_every_job_is_done_once_by_the_children():
    before = children_of(os.getpid())
    jobs = list(range(200))
    with forked.ForkedMap(_square_with_pid, jobs, 3) as results:
        got = list(results)
    assert sorted((n, sq) for n, sq, _ in got) == [(n, n * n) for n in jobs]
    pids = {pid for _, _, pid in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= 3
    assert no_children_left(before)


def test_more_job_numbers_than_a_pipe_holds_and_big_results():
    jobs = list(range(20_000))  # 80 kB of job numbers: more than a default pipe buffer
    with forked.ForkedMap(lambda n: n, jobs, 2) as results:
        assert sorted(results) == jobs
    with forked.ForkedMap(lambda n: bytes(3_000_000) + bytes([n]), [1, 2, 3], 2) as results:
        assert sorted(r[-1] for r in results) == [1, 2, 3]


_marks: list[str] = []


def test_init_runs_in_each_child_before_its_jobs():
    def init():
        _marks.append("ready")

    with forked.ForkedMap(lambda n: list(_marks), range(10), 2, init=init) as results:
        assert all(seen == ["ready"] for seen in results)
    assert _marks == []  # the parent's copy is untouched


def _fail_on_seven(n: int) -> int:
    if n == 7:
        raise ValueError("job seven is bad")
    return n


def _die_on_three(n: int) -> int:
    if n == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


@pytest.mark.parametrize("func, workers, message", [
    (_fail_on_seven, 2, "ValueError: job seven is bad"),  # an error in a child: raised with the child's traceback
    (_die_on_three, 1, "ended early.*signal 9"),          # a child killed from outside: an error, not a hang
])
def test_a_failed_child_is_an_error_and_leaves_no_process(func, workers, message):
    before = children_of(os.getpid())
    with pytest.raises(forked.WorkerFailed, match=message):
        with forked.ForkedMap(func, list(range(50)), workers) as results:
            list(results)
    assert no_children_left(before)


def test_leaving_early_stops_the_children():
    before = children_of(os.getpid())
    with forked.ForkedMap(lambda n: time.sleep(0.05) or n, list(range(400)), 2) as results:
        for _ in results:
            break
    assert no_children_left(before)
