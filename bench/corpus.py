"""A deterministic benchmark corpus built from the project's fixtures in tests/fixtures (transcripts the
real Claude Code CLI wrote through tests/fakeapi).

Each copy of a fixture gets fresh ids (session, message, request, tool-use and
entry uuids, consistently renamed so folding and sidechains behave as in the
original) and times shifted by whole days. A seeded share of the copies also
get their tool-result texts varied, so the corpus is not all copies of the same
texts and the tokenizer's content-hash cache cannot make the bench look cheap.

    python bench/corpus.py --mb 50 --out /tmp/corpus   # -> /tmp/corpus/.claude/projects/...
"""
from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

_ID = re.compile(rb'"(msg_[A-Za-z0-9_]+|req_[A-Za-z0-9_]+|toolu_[A-Za-z0-9_]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}'
                 rb'-[0-9a-f]{4}-[0-9a-f]{12}|agent-[0-9a-f]+|a[0-9a-f]{16})"')
_UUID = re.compile(rb'(?<![0-9a-f])([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f])')
_TIME = re.compile(rb'"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')
_NEWLINE = re.compile(rb'\\n(?=[^"\\])')  # an escaped newline inside a JSON string, text following


def sources() -> list[Path]:
    """Fixture transcripts (main and subagent files), not the fake API's own logs. The same scenarios written
    by a later CLI version are left out, so the corpus (and every figure measured on it) stays comparable."""
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if p.name not in ("api.jsonl", "results.jsonl")
                  and not any(part.startswith("claude-code-") and part != "claude-code-2.1.328" for part in p.parts))


def long_session() -> Path:
    """The long-session fixture's transcript (the latency benches append it line by line)."""
    (path,) = (FIXTURES / "claude-code-2.1.328" / "long-session" / "projects").glob("*/*.jsonl")
    return path


def _renamer(copy: int):
    def fresh(match: re.Match) -> bytes:
        old = match.group(1)
        digest = hashlib.sha1(old + b"|" + str(copy).encode()).hexdigest()
        if old.startswith(b"msg_"):
            return b'"msg_' + digest[:24].encode() + b'"'
        if old.startswith(b"req_"):
            return b'"req_' + digest[:24].encode() + b'"'
        if old.startswith(b"toolu_"):
            return b'"toolu_' + digest[:24].encode() + b'"'
        if old.startswith(b"agent-"):
            return b'"agent-' + digest[:16].encode() + b'"'
        if len(old) == 17 and old.startswith(b"a"):
            return b'"a' + digest[:16].encode() + b'"'
        h = digest[:32]
        return f'"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"'.encode()
    return fresh


def _shifter(days: int):
    def shift(match: re.Match) -> bytes:
        raw = match.group(1).decode()
        t = datetime.fromisoformat(raw.replace("Z", "+00:00")) + timedelta(days=days)
        return b'"' + t.isoformat(timespec="milliseconds").replace("+00:00", "Z").encode() + b'"'
    return shift


def rewrite(data: bytes, copy: int, vary: bool) -> bytes:
    fresh = _renamer(copy)
    # uuids everywhere, also inside texts ("read the full transcript at: .../<session>.jsonl"); other ids as strings
    out = _UUID.sub(lambda m: fresh(m).strip(b'"'), data)
    out = _ID.sub(lambda m: m.group(0) if _UUID.fullmatch(m.group(1)) else fresh(m), out)
    out = _TIME.sub(_shifter(copy), out)
    if vary:  # a marker after every newline inside texts: new texts of the same shape and size
        mark = b"\\n" + f"{copy % 97:02d}".encode()
        out = _NEWLINE.sub(lambda m: mark, out)
    return out


def build(mb: float, out: Path, seed: int = 7, vary_share: float = 0.5, max_files: int | None = None) -> dict:
    """Copies of the fixtures until `mb` is reached (or `max_files` transcripts are written)."""
    rnd = random.Random(seed)
    target = int(mb * (1 << 20))
    files = sources()
    originals = {p: p.read_bytes() for p in files}
    projects = out / ".claude" / "projects"
    written, copy, count = 0, 0, 0
    while written < target and (max_files is None or count < max_files):
        copy += 1
        vary = rnd.random() < vary_share
        for src, data in originals.items():
            rel = src.relative_to(FIXTURES)
            body = rewrite(data, copy, vary)
            session = _ID.sub(_renamer(copy), f'"{src.stem}"'.encode()).decode().strip('"') \
                if re.fullmatch(r"[0-9a-f-]{36}|agent-[0-9a-f]+", src.stem) else f"{src.stem}-{copy}"
            parts = rel.parts
            project = f"-bench-{copy % 40:02d}-{parts[0]}"
            if "subagents" in parts:  # <session>/subagents/agent-x.jsonl: rename the session folder too
                parent = _ID.sub(_renamer(copy), f'"{src.parent.parent.name}"'.encode()).decode().strip('"')
                dest = projects / project / parent / "subagents" / f"{session}.jsonl"
            else:
                dest = projects / project / f"{session}.jsonl"
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(body)
            written += len(body)
            count += 1
            if written >= target or count == max_files:
                break
    return {"files": count, "bytes": written, "copies": copy, "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--files", type=int, help="stop after this many transcripts (the size is then a maximum)")
    ap.add_argument("--vary-share", type=float, default=0.5, help="share of copies whose texts are varied")
    args = ap.parse_args(argv)
    info = build(args.mb, args.out, args.seed, args.vary_share, args.files)
    print(f"corpus: {info['files']} files, {info['bytes'] / (1 << 20):.1f} MB in {info['out']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
