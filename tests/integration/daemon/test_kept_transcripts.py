"""The service keeps a compressed copy of every transcript it has read (issue 49): once Claude Code deletes
the transcripts, the report, `ctxlamp replay` and the history tools answer as before."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

from service import config as config_mod
from service.client.paths import app_paths
from service.daemon.runtime import Service
from service.history import answers
from service.ingest import kept
from service.report.build import compute
from tests.integration.daemon.test_first_pass import _history
from tests.support.corpus import ROOT


def _read(svc: Service) -> None:
    svc._build()
    _live, old = svc.following.discover()
    svc.jobs._scan(svc.jobs.plan_scan(old))
    assert svc.scan["state"] == "idle"


def _replay(path: Path, *extra: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(path), *extra], capture_output=True,
                          cwd=ROOT, timeout=300, text=True, env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _history_answers(svc: Service, mains: list[Path]) -> list:
    return [(answers.page(svc.reads, p.stem, 1), answers.search(svc.reads, p.stem, "the"),
             answers.locate(svc.reads, p.stem, "README.md")) for p in mains]


def _report() -> dict:
    doc = compute(None, None, use_cache=False, workers=1)  # read from the files (or their copies), not a cache
    return {k: v for k, v in doc.items() if k not in ("sources", "generated_at")}


def test_deleted_transcripts_read_from_their_kept_copies_give_the_same_report_replay_and_history(ctx_home):
    projects, copied = _history(ctx_home)
    paths = app_paths()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    try:
        _read(svc)
        folder = kept.folder_of(paths.data)
        for path in copied:  # a gzip copy of each, under its own name in the same tree
            copy = folder / path.relative_to(projects)
            assert gzip.decompress(copy.read_bytes()) == path.read_bytes()
        assert svc.keeper.block == {"on": True, "files": len(copied),
                                    "bytes": sum((folder / p.relative_to(projects)).stat().st_size for p in copied)}
        mains = sorted(p for p in copied if "subagents" not in p.parts and not p.name.startswith("agent-"))
        report, history = _report(), _history_answers(svc, mains)
        replays = [_replay(p, "--jsonl", "--with-subagents") for p in mains[:3]]
    finally:
        svc.persist.close()

    shutil.rmtree(projects)  # Claude Code's cleanup
    projects.mkdir()
    svc = Service(paths, config_mod.load(paths.config_file), projects=projects)
    try:
        _read(svc)  # a later start over the emptied folder
        assert _report() == report
        assert _history_answers(svc, mains) == history
        got = [_replay(p, "--jsonl", "--with-subagents") for p in mains[:3]]
        assert [r.replace(str(folder), str(projects)) for r in got] == replays
        assert svc.keeper.block["files"] == len(copied)  # the copies outlive their transcripts
    finally:
        svc.persist.close()


def test_without_prompt_text_nothing_is_kept(ctx_home):
    projects, _ = _history(ctx_home)
    paths = app_paths()
    cfg = config_mod.load(paths.config_file)
    cfg["history"]["store_prompts"] = False
    svc = Service(paths, cfg, projects=projects)
    try:
        _read(svc)
        assert svc.keeper.block == {"on": False, "files": 0, "bytes": 0}
        assert not kept.folder_of(paths.data).exists()
    finally:
        svc.persist.close()
