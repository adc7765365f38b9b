"""`ctxlamp calibrate`: the fitted ratio recovers a known one."""
from __future__ import annotations

import random
import subprocess
import sys

from service.engine_setup.calibrate import fit, pairs
from service.engine_setup.tokenizer import encode_len
from tests.support import transcripts as T
from tests.support.corpus import ROOT


def session_with_ratio(ratio: float, n: int = 30, seed: int = 1) -> list[dict]:
    """Calls whose prompt grows by exactly ratio * o200k(result) + output + 40 framing tokens."""
    rnd = random.Random(seed)
    entries = [T.prompt("go", 0), T.call("c0", 1, inn=3, cw5=20_000, out=50)]
    stock, out = 20_003, 50
    for i in range(n):
        text = "\n".join(f"line {j}: value = {rnd.randint(0, 10**6)}" for j in range(rnd.randint(30, 300)))
        entries.append(T.call(f"c{i}r", 2 + i, inn=3, cw5=10, cr=stock - 13, out=out,
                              tools=[T.tool(f"t{i}", "Read", file_path=f"{T.CWD}/f{i}.py")]))
        entries.append(T.result(f"t{i}", text, 2.5 + i))
        stock += round(ratio * encode_len(text)) + out + 40
        out = rnd.randint(20, 200)
    return entries


def test_fit_recovers_the_ratio_and_the_overhead():
    (f,) = fit(pairs(session_with_ratio(1.17), encode_len))
    assert f.family == "sonnet" and f.points >= 25
    assert abs(f.ratio - 1.17) < 0.01
    assert abs(f.overhead - 40) < 15
    assert f.rel_error_pct < 2


def test_command_prints_a_fit_and_writes_it_to_the_config(tmp_path, ctx_home):
    path = tmp_path / "s.jsonl"
    path.write_bytes(T.to_bytes(session_with_ratio(0.9)))
    proc = subprocess.run([sys.executable, "-m", "service.cli", "calibrate", str(path), "--write"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "sonnet" in proc.stdout and "0.9" in proc.stdout
    config = (ctx_home / "config.toml").read_text()
    assert "ratio.sonnet = 0.9" in config


def test_too_little_data_says_so(tmp_path, ctx_home):
    path = tmp_path / "s.jsonl"
    path.write_bytes(T.to_bytes([T.prompt("hi"), T.call("a", 1, cw5=100)]))
    proc = subprocess.run([sys.executable, "-m", "service.cli", "calibrate", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1 and "not enough" in proc.stdout
