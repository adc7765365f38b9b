"""`ctxlamp doctor` on the kept copies: their size, and a warning while Claude Code's cleanupPeriodDays would
delete transcripts ctxlamp has not kept."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from service.cli import keeping
from service.client.paths import app_paths
from service.ingest import kept
from tests.support import transcripts as T


def test_the_doctor_warns_of_transcripts_a_cleanup_would_delete_until_they_are_kept(ctx_home):
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    projects = claude / "projects"
    main = projects / "-w-p" / "s1.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(T.to_bytes([T.call("m1", 0)]))
    now = time.time()
    os.utime(main, (now - 25.5 * 86400, now - 25.5 * 86400))
    (claude / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 27}))
    lines, warned = keeping.report(now)
    assert warned and lines[0].startswith("kept copies of transcripts: 0 files, 0 B in ")
    assert lines[1] == ("warning: Claude Code deletes transcripts 27 days after their last change (cleanupPeriodDays); "
                        "1 transcript ctxlamp has not kept, the oldest due in 1 day: start the service (it keeps a "
                        "copy of each once idle)")
    (claude / "settings.json").write_text("{not json")  # unreadable: Claude Code's default, 30 days
    assert "due in 4 days" in keeping.report(now)[0][1]

    folder = kept.folder_of(app_paths().data)
    assert kept.keep([str(main)], projects, folder, now=now)[:1] == (1,)
    lines, warned = keeping.report(now)
    size = (folder / "-w-p" / "s1.jsonl").stat().st_size
    assert not warned and lines == [f"kept copies of transcripts: 1 file, {size} B in {folder}"]
    main.write_bytes(main.read_bytes() + T.to_bytes([T.call("m2", 5)]))  # grew since: its copy is stale
    assert keeping.report()[1]
