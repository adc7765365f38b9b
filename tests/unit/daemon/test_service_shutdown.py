"""A graceful stop finishes while the scheduler's checkpoint job is half-way through.

The job (`checkpoint_now`) takes the checkpoint lock, then the registry's lock.
A stop that took them the other way round waited for the job while the job
waited for it: the service hung until it was killed.
"""
from __future__ import annotations

import threading

from service import config as config_mod
from service.daemon import checkpoint
from service.daemon.runtime import Service
from service.client.paths import app_paths


class _SlowToRelease:
    """The checkpoint lock, held for a moment by whoever takes it first (the job), so the stop starts meanwhile."""

    def __init__(self, lock: threading.Lock, taken: threading.Event):
        self.lock, self.taken = lock, taken

    def __enter__(self):
        self.lock.acquire()
        if not self.taken.is_set():
            self.taken.set()
            threading.Event().wait(0.3)
        return self

    def __exit__(self, *exc):
        self.lock.release()


def test_a_stop_during_a_checkpoint_job_does_not_deadlock(ctx_home):
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file))
    svc._build()
    taken = threading.Event()
    svc.jobs.ckpt_lock = _SlowToRelease(svc.jobs.ckpt_lock, taken)

    job = threading.Thread(target=svc.jobs.checkpoint_now, kwargs={"force": True}, daemon=True)
    job.start()
    assert taken.wait(5)
    stop = threading.Thread(target=svc._shutdown, daemon=True)
    stop.start()
    job.join(10)
    stop.join(10)
    assert not job.is_alive() and not stop.is_alive(), "the stop and the checkpoint job wait for each other"
    doc, rejected = checkpoint.load_latest(paths.checkpoints)
    assert doc is not None and not rejected, "the stop wrote its final checkpoint, whole"
    assert not [p.name for p in paths.checkpoints.iterdir() if p.name.startswith(".")], "no write left half done"
