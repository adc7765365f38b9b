"""The API's door under abuse: tokens, Host, binding, body sizes, slow and many clients, file modes.

Everything runs against a real `ctxlamp serve` over real sockets. The rules
are those of docs/api.md: Host (403) -> token (401) -> body size (413/411) ->
route; 127.0.0.1 only; 10 s socket timeout; files 0600, folders 0700.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.harness import LONG_SESSION, Api, Events, Service, append_lines, service_env, wait_for

SOCKET_TIMEOUT_S = 10  # docs/api.md: connections time out after 10 s of silence


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One running service with a live session, and a second user's service beside it."""
    root = tmp_path_factory.mktemp("door")
    home, claude = root / "home", root / "claude"
    proj = claude / "projects" / "-home-user-demo-project"
    proj.mkdir(parents=True)
    home.mkdir()
    lines = LONG_SESSION.read_bytes().splitlines(keepends=True)
    dst = proj / LONG_SESSION.name
    append_lines(lines[:200], dst)
    other_home, other_claude = root / "other-home", root / "other-claude"
    (other_claude / "projects").mkdir(parents=True)
    other_home.mkdir()
    svc = Service(service_env(home, claude), home).start()
    other = Service(service_env(other_home, other_claude), other_home).start()
    try:
        yield {"svc": svc, "other": other, "home": home, "dst": dst, "lines": lines, "next": [200]}
    finally:
        svc.stop()
        other.stop()


def _routes(api: Api) -> list[tuple[str, str]]:
    doc = api.get("/api/v1/openapi.json")
    out = []
    for path, ops in doc["paths"].items():
        if ops.get("get", {}).get("security") == []:
            continue  # the proof route, asked before the token is sent: test_the_proof_route_tells_nothing
        concrete = re.sub(r"\{[^}]+\}", "x", path).replace("/channels/x", "/channels/edit")
        out += [(m.upper(), concrete) for m in ops]
    return out


def _raw(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send raw bytes, return everything the server answers until it closes (or the timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                    break
        except TimeoutError:
            pass
    return b"".join(chunks)


def _complete(raw: bytes) -> bool:
    head, _, body = raw.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    return bool(m) and len(body) >= int(m.group(1))


def _status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


# ---- tokens ---------------------------------------------------------------------------------------
def test_every_route_refuses_no_token_a_wrong_one_and_another_users(world):
    svc, other = world["svc"], world["other"]
    api = svc.api
    routes = _routes(api)
    assert len(routes) >= 19
    foreign = other.info["token"]
    assert foreign != svc.info["token"]
    for method, path in routes:
        body = {} if method == "POST" else None
        for token in (None, "", "x" * 43, svc.info["token"][:-1], svc.info["token"] + "x", foreign,
                      svc.info["token"].lower() if svc.info["token"] != svc.info["token"].lower() else "A"):
            status, obj = api.request(method, path, body=body, token=token)
            assert status == 401, (method, path, token, status, obj)
            assert obj == {"error": obj["error"]}
    # a Basic header with the right token, or the token as a query parameter, is not a bearer token either
    tok = svc.info["token"]
    assert api.request("GET", "/api/v1/status", token=None, headers={"Authorization": f"Basic {tok}"})[0] == 401
    assert api.request("GET", f"/api/v1/status?token={tok}", token=None)[0] == 401
    # and the other user's service refuses ours
    assert other.api.request("GET", "/api/v1/status", token=svc.info["token"])[0] == 401


def test_the_proof_route_tells_nothing_but_its_proof(world):
    """The one route without a token answers a fresh nonce with the service's proof and nothing else."""
    from service.client import proof

    svc = world["svc"]
    doc = svc.api.get("/api/v1/openapi.json")
    assert [p for p, ops in doc["paths"].items() if ops.get("get", {}).get("security") == []] == [proof.PATH]
    nonce = proof.new_nonce()
    status, obj = svc.api.request("GET", f"{proof.PATH}?nonce={nonce}", token=None)
    assert status == 200 and set(obj) == {"proof"}
    assert proof.holds(svc.info["proof_key"], nonce, svc.info["port"], obj["proof"])
    assert not proof.holds(world["other"].info["proof_key"], nonce, svc.info["port"], obj["proof"])
    for bad in ("", "short", "x" * 32, "A" * 32, "a" * 129):
        status, obj = svc.api.request("GET", f"{proof.PATH}?nonce={bad}", token=None)
        assert status == 400 and set(obj) == {"error"}
    assert svc.api.request("POST", f"{proof.PATH}?nonce={nonce}", body={}, token=None)[0] == 401



def test_the_door_answers_a_proof_itself_and_keeps_the_connection_for_the_request(world):
    """A plain proof request is answered by the door (no worker), an unusual one by the handler: the
    same proof either way, and the connection stays open for the request that follows it."""
    from service.client import proof

    svc = world["svc"]
    port, token = svc.info["port"], svc.info["token"]
    for extra in ("", "Content-Length: 0\r\n", "X-A: 1\r\nx-a: 2\r\n"):  # the last two: the handler's way
        nonce = proof.new_nonce()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(f"GET {proof.PATH}?nonce={nonce} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode())
            head, body = _one_answer(s)
            assert head.startswith(b"HTTP/1.1 200") and b"connection: close" not in head.lower(), head
            assert proof.holds(svc.info["proof_key"], nonce, port, json.loads(body)["proof"]), extra
            s.sendall(f"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                      "Connection: close\r\n\r\n".encode())
            head, body = _one_answer(s)
            assert head.startswith(b"HTTP/1.1 200") and json.loads(body)["ok"] is True


def _one_answer(s: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
    while len(body) < length:
        body += s.recv(4096)
    return head, body


# ---- Host ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example",
                                  "evil.example:80", "127.0.0.2", "0.0.0.0", "[::1].evil", "192.0.2.2",
                                  "localhost:99999999", "127.0.0.1:80@evil.example", ""])
def test_a_foreign_host_header_gets_403_before_the_token_is_checked(world, host):
    api = world["svc"].api
    for token in ("ok", None):
        status, obj = api.request("GET", "/api/v1/status", headers={"Host": host}, token=token)
        assert status == 403, (host, token, status, obj)


def test_a_request_without_any_host_header_gets_403(world):
    svc = world["svc"]
    raw = _raw(svc.api.port, (f"GET /api/v1/status HTTP/1.1\r\nAuthorization: Bearer {svc.info['token']}\r\n"
                              "Connection: close\r\n\r\n").encode())
    assert _status_of(raw) == 403


# ---- binding ------------------------------------------------------------------------------------------------
def _listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket the process holds, from /proc (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
                continue
            addr_hex, port_hex = f[1].split(":")
            if width == 8:
                addr = socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr_hex)[::-1])
            else:
                words = [bytes.fromhex(addr_hex[i:i + 8])[::-1] for i in range(0, 32, 8)]
                addr = socket.inet_ntop(socket.AF_INET6, b"".join(words))
            out.append((addr, int(port_hex, 16)))
    return out


def test_the_service_listens_on_127_0_0_1_only(world):
    svc = world["svc"]
    bound = _listening(svc.proc.pid)
    assert bound == [("127.0.0.1", svc.api.port)], bound
    if shutil.which("ss"):  # the same from ss(8), as a user would check it
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=10).stdout
        mine = [ln.split()[3] for ln in out.splitlines() if f"pid={svc.proc.pid}," in ln]
        assert mine == [f"127.0.0.1:{svc.api.port}"], out
    # every other address of this machine refuses the port
    addrs = set()
    for fam, _, _, _, sa in socket.getaddrinfo(socket.gethostname(), None):
        addrs.add((fam, sa[0]))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # the address outward traffic leaves from
        try:
            probe.connect(("192.0.2.123", 9))
            addrs.add((socket.AF_INET, probe.getsockname()[0]))
        except OSError:
            pass
    addrs.add((socket.AF_INET6, "::1"))  # IPv6 loopback is not 127.0.0.1 either
    others = {(f, a) for f, a in addrs if not a.startswith("127.") and a not in ("0.0.0.0", "::")}
    assert others, "no non-loopback address to try"
    for fam, addr in others:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            with pytest.raises(OSError):
                s.connect((addr, svc.api.port))
        finally:
            s.close()


def test_no_environment_or_config_moves_the_bind_off_loopback(tmp_path):
    """Whatever a user (or malware) puts in the usual host variables, the bind stays on 127.0.0.1."""
    home, claude = tmp_path / "home", tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    home.mkdir()
    env = service_env(home, claude, HOST="0.0.0.0", CTXLAMP_HOST="0.0.0.0", BIND="0.0.0.0",
                      CTXLAMP_BIND="0.0.0.0", HTTP_HOST="0.0.0.0", CTXLAMP_API_HOST="0.0.0.0")
    with Service(env, home) as svc:
        assert _listening(svc.proc.pid) == [("127.0.0.1", svc.api.port)]
    # a config that asks for another address is refused, not half-obeyed: the value is named and left out
    # (issue 25: a bad value in config.toml never stops the service), and the bind stays on loopback
    (home / "config.toml").write_text('[api]\nhost = "0.0.0.0"\n')
    with Service(env, home) as svc:
        assert _listening(svc.proc.pid) == [("127.0.0.1", svc.api.port)]
        told = svc.stderr() + (svc.log_path().read_text() if svc.log_path().exists() else "")
        assert "unknown section [api]" in told, told


# ---- bodies ------------------------------------------------------------------------------------------------
def test_an_announced_oversized_body_is_refused_without_reading_it(world):
    svc = world["svc"]
    head = (f"POST /api/v1/rotate HTTP/1.1\r\nHost: 127.0.0.1:{svc.api.port}\r\n"
            f"Authorization: Bearer {svc.info['token']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {(1 << 30)}\r\n\r\n").encode()
    t0 = time.monotonic()
    raw = _raw(svc.api.port, head + b"{", timeout=5)
    assert _status_of(raw) == 413 and time.monotonic() - t0 < 2
    # a real body one byte over the cap: the client sends it whole and reads 413 (the service drops the
    # body's bytes, bounded, before it closes, so the client is never cut off while it still sends)
    over = b"{" + b" " * ((1 << 20) - 1) + b"}"
    with socket.create_connection(("127.0.0.1", svc.api.port), timeout=5) as s:
        s.sendall(head.replace(str(1 << 30).encode(), str(len(over)).encode()) + over)
        answer = s.recv(65536)
    assert _status_of(answer) == 413, answer[:100]
    # chunked: 411; a negative or junk length: 400
    chunked = (f"POST /api/v1/rotate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {svc.info['token']}\r\n"
               "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n").encode()
    assert _status_of(_raw(svc.api.port, chunked)) == 411
    for length in ("-1", "abc", "1e9"):
        bad = (f"POST /api/v1/rotate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {svc.info['token']}\r\n"
               f"Content-Length: {length}\r\n\r\n{{}}").encode()
        assert _status_of(_raw(svc.api.port, bad)) == 400, length
    assert svc.api.get("/api/v1/health")["ok"] is True


# ---- slow clients ---------------------------------------------------------------------------------------------
def test_slow_clients_do_not_block_others_and_are_cut_after_the_socket_timeout(world):
    svc = world["svc"]
    port = svc.api.port
    request = (f"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"Authorization: Bearer {svc.info['token']}\r\n").encode()
    stalled = []
    for n in range(40):  # each sends part of its headers byte by byte, then stalls
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        for b in request[: 10 + n]:
            s.send(bytes([b]))
        stalled.append(s)
    t0 = time.monotonic()
    for _ in range(5):
        assert svc.api.status(timeout=5)["service"]["pid"] == svc.proc.pid
    assert time.monotonic() - t0 < 3, "other clients were held up by the stalled ones"
    # a slow POST body (headers complete, body trickling) does not block either
    slow_body = socket.create_connection(("127.0.0.1", port), timeout=30)
    slow_body.sendall((f"POST /api/v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                       f"{svc.info['token']}\r\nContent-Length: 100\r\n\r\n{{").encode())
    stalled.append(slow_body)
    assert svc.api.get("/api/v1/health", timeout=5)["ok"] is True
    # the service hangs up on every stalled connection after its socket timeout
    t0 = time.monotonic()
    for s in stalled:
        s.settimeout(SOCKET_TIMEOUT_S + 10 - (time.monotonic() - t0))
        try:
            rest = s.recv(65536)
        except ConnectionResetError:
            rest = b""
        assert rest in (b"",) or rest.startswith(b"HTTP/1."), rest[:80]
        s.close()
    assert time.monotonic() - t0 < SOCKET_TIMEOUT_S + 5
    assert svc.api.get("/api/v1/health")["ok"] is True


# ---- many SSE clients ----------------------------------------------------------------------------------------------
def test_many_sse_clients_coming_and_going_leave_no_threads_and_keep_the_service_up(world):
    svc, dst, lines = world["svc"], world["dst"], world["lines"]
    pid = svc.proc.pid
    wait_for(lambda: _threads(pid) < 40, what="a quiet service")
    baseline = _threads(pid)
    keep = Events(svc.info)  # one well-behaved client stays connected throughout
    wait_for(lambda: keep.of("service"), what="the stayer's first event")

    def flash(n: int) -> None:
        s = socket.create_connection(("127.0.0.1", svc.api.port), timeout=10)
        s.sendall((f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                   f"{svc.info['token']}\r\n\r\n").encode())
        if n % 3:  # some read the first event, some hang up at once, some reset the connection
            s.recv(4096)
        if n % 5 == 0:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()

    for _ in range(3):
        workers = [threading.Thread(target=flash, args=(n,)) for n in range(60)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(20)
        assert svc.api.get("/api/v1/health", timeout=5)["ok"] is True
    # a dead client is found on the next write: one append publishes a snapshot, and they all go
    nxt = world["next"]
    before = len(keep.of("snapshot"))
    append_lines(lines[nxt[0]: nxt[0] + 5], dst)
    nxt[0] += 5
    wait_for(lambda: len(keep.of("snapshot")) > before, what="the stayer sees the new snapshot")
    wait_for(lambda: _threads(pid) <= baseline + 2, timeout=15,
             what=f"threads back to {baseline} (now {_threads(pid)})")
    assert keep.ended.is_set() is False
    keep.close()


# ---- files on disk ---------------------------------------------------------------------------------------------------
def test_files_holding_tokens_prompts_or_history_are_private(world):
    svc, home = world["svc"], world["home"]
    assert svc.api.get("/api/v1/status")["sessions"]
    svc.api.request("POST", "/api/v1/handoffs", body={"task": "t", "body": "secret prompt", "project": "/p"})
    seen = []
    for path in [home, *home.rglob("*")]:
        if "tiktoken" in path.relative_to(home).parts:
            continue  # the public o200k tokenizer file (service/engine_setup/tokenizer.py), inside the 0700 folder
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
        else:
            assert mode & 0o077 == 0, (path, oct(mode))
        seen.append(path.name)
    for name in ("api.json", "ctxlamp.db", "config.toml", "service.log", "checkpoints"):
        assert name in seen, (name, seen)
    info = json.loads((home / "api.json").read_text())
    assert info["token"] == svc.info["token"]


# ---- methods the routes do not name ----------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["TRACE", "OPTIONS", "CONNECT", "QUERY", "PROPFIND", "BREW"])
def test_other_methods_pass_the_same_checks_and_get_405_not_an_open_501_page(world, method):
    svc = world["svc"]
    assert svc.api.request(method, "/api/v1/status", token=None)[0] == 401
    assert svc.api.request(method, "/api/v1/status", headers={"Host": "evil.example"})[0] == 403
    status, obj = svc.api.request(method, "/api/v1/status")
    assert status == 405 and "not allowed" in obj["error"], (status, obj)
    assert svc.api.request(method, "/api/v1/nope")[0] == 404
