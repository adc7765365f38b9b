"""Lay a folder of real transcripts out as a Claude Code history, so every bench reads it as it reads the corpus.

Real histories are slower per byte than bench/corpus.py's generated one (longer texts to count, more
tools, older CLI versions), and at 50 MB both tools' start-up weighs more. Any folder of `*.jsonl` files
(owner/repo/path trees, as the real-wild set is published, or a `projects/` folder) becomes
`OUT/.claude/projects/<project>/...`: a transcript's folders become its project's name, and a subagent's
`<session>/subagents/agent-*.jsonl` stays under its session as Claude Code writes it. Files are copied
(never linked: the bench must not read through a link into the source) with their modification times.

    python bench/real_history.py --src REAL_DIR --out /tmp/real   # -> /tmp/real/.claude/projects/...
    python bench/peers.py --corpus /tmp/real --runs 5 --no-monitor
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path


def project_path(rel: Path) -> Path:
    """Where the transcript at `rel` (relative to the source) goes under projects/."""
    parts = rel.parts
    if len(parts) >= 3 and parts[-2] == "subagents":  # <folders>/<session>/subagents/agent-x.jsonl
        return Path("-".join(parts[:-3]) or "project") / parts[-3] / "subagents" / parts[-1]
    return Path("-".join(parts[:-1]) or "project") / parts[-1]


def lay_out(src: Path, out: Path) -> dict:
    projects = out / ".claude" / "projects"
    files = size = 0
    for path in sorted(src.rglob("*.jsonl")):
        if not path.is_file() or path.is_symlink():
            continue
        target = projects / project_path(path.relative_to(src))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        files += 1
        size += path.stat().st_size
    return {"projects": str(projects), "files": files, "mb": round(size / 2**20, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True, help="a folder holding real transcripts (*.jsonl, any depth)")
    ap.add_argument("--out", type=Path, required=True, help="the history is written to OUT/.claude/projects")
    args = ap.parse_args(argv)
    if (args.out / ".claude").exists():
        print(f"{args.out / '.claude'} exists; choose an empty --out", file=sys.stderr)
        return 2
    print(lay_out(args.src, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
