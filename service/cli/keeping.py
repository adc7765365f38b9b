"""What `ctxlamp doctor` says of the kept copies of transcripts: their size, and a warning when Claude Code's
`cleanupPeriodDays` (settings.json, 30 days by default) would delete transcripts ctxlamp has not kept."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

CLEANUP_DEFAULT_DAYS = 30


def cleanup_days(claude: Path) -> int:
    """Claude Code's `cleanupPeriodDays` (its settings.json), else its default."""
    try:
        value = json.loads((claude / "settings.json").read_text(encoding="utf-8")).get("cleanupPeriodDays")
    except (OSError, ValueError, AttributeError):
        return CLEANUP_DEFAULT_DAYS
    return value if type(value) is int and 0 <= value <= 100_000 else CLEANUP_DEFAULT_DAYS


def report(now: float | None = None) -> tuple[list[str], bool]:
    """(lines for the doctor, whether one is a warning)."""
    from service import config
    from service.client.figures import plural, size
    from service.client.paths import app_paths, claude_dir, claude_projects
    from service.client.textsafe import printable
    from service.ingest import kept
    from service.report.scan import discover

    paths = app_paths()
    try:
        cfg = config.load(paths.config_file) if paths.config_file.is_file() else config.DEFAULTS
    except (config.ConfigError, OSError):
        cfg = config.DEFAULTS
    folder = kept.folder_of(paths.data)
    copies, on_disk = kept.kept_size(folder)
    on = config.keeps_copies(cfg)
    lines = [f"kept copies of transcripts: {plural(copies, 'file')}, {size(on_disk)} in {printable(str(folder), 300)}"
             + ("" if on else " (keeping is off: [transcripts] keep_copies, or [history] store_prompts = false)")]
    projects = claude_projects()
    days = cleanup_days(claude_dir())
    missing = kept.not_kept([tf.path for tf in discover(projects)], projects, folder)
    if not missing:
        return lines, False
    now = time.time() if now is None else now
    ages = []
    for path in missing:
        try:
            ages.append((now - os.stat(path).st_mtime) / 86400)
        except OSError:
            continue
    if not ages:
        return lines, False
    left = max(0.0, days - max(ages))
    lines.append(f"warning: Claude Code deletes transcripts {plural(days, 'day')} after their last change "
                 f"(cleanupPeriodDays); {plural(len(ages), 'transcript')} ctxlamp has not kept, the oldest "
                 + ("due now" if left < 1 else f"due in {plural(int(left), 'day')}")
                 + (": start the service (it keeps a copy of each once idle)" if on
                    else ": turn [transcripts] keep_copies on to keep them"))
    return lines, True
