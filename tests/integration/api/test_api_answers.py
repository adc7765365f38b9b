"""What a real `ctxlamp serve` answers: whole (however big and however slowly read), without a
configured password, and in JSON for every fault (an out-of-range date, an over-long request line)."""
from __future__ import annotations

import json
import socket
import time
import tomllib
import urllib.parse

import pytest

from tests.support.harness import one_session_home
from tests.support.servicectl import running_service

TEAM_PASSWORD = "Tr0ub4dor&3:x@y"
TEAM_URL = f"postgresql://ada:{urllib.parse.quote(TEAM_PASSWORD, safe='')}@127.0.0.1:1/team"
DB_PASSWORD = "s3cr3t-d4t4b4se"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("answers")
    home, env = one_session_home(tmp, 10)
    (home / "config.toml").write_text(f'[team]\nurl = "{TEAM_URL}"\nmember = "ada"\npush_every = "60m"\n')
    with running_service(env, home) as (proc, info):
        yield {**info, "home": home}


def exchange(info: dict, head: bytes, body: bytes = b"", *, slow: bool = False) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body as received until the service closed) of one request on a fresh connection.
    `slow`: a small receive buffer read a little at a time, as a busy client reads."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if slow:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", info["port"]))
        s.sendall(head + body)
        data = bytearray()
        while True:
            chunk = s.recv(4096 if slow else 1 << 16)
            if not chunk:
                break
            data += chunk
            if slow and len(data) % (256 << 10) < 4096:
                time.sleep(0.01)
    top, _, rest = bytes(data).partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return int(lines[0].split()[1]), headers, rest


def call(info: dict, method: str, path: str, obj: object = None, *, slow: bool = False,
         token: bool = True) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps(obj).encode() if obj is not None else b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n" + (f"Authorization: Bearer {info['token']}\r\n" if token else "")
            + "\r\n").encode()
    return exchange(info, head, body, slow=slow)


def test_a_big_answer_arrives_whole_to_a_slow_reader(served):
    for i in range(60):  # handoffs of 100 kB: the list answers the newest 50, a 5 MB answer
        status, _, _ = call(served, "POST", "/api/v1/handoffs",
                            {"task": f"t{i}", "body": f"{i:03d}" + "x" * 99_990, "project": "/p"})
        assert status == 200
    status, headers, body = call(served, "GET", "/api/v1/handoffs", slow=True)
    assert status == 200
    assert len(body) == int(headers["content-length"]) > 4_500_000
    assert len(json.loads(body)["handoffs"]) == 50


def test_settings_are_served_without_passwords(served):
    status, _, body = call(served, "GET", "/api/v1/config")
    assert status == 200
    cfg = json.loads(body)
    assert cfg["team"]["url"].startswith("postgresql://ada:") and cfg["team"]["member"] == "ada"
    text = body.decode()
    for form in (TEAM_PASSWORD, urllib.parse.quote(TEAM_PASSWORD, safe=""), "Tr0ub4dor"):
        assert form not in text
    database = f"postgresql://ada:{DB_PASSWORD}@127.0.0.1:1/ctx"
    status, _, body = call(served, "POST", "/api/v1/config?check=1", {"database": {"url": database}})
    assert status == 200 and DB_PASSWORD not in body.decode()
    assert json.loads(body)["database"]["url"].startswith("postgresql://ada:")


def test_a_masked_url_sent_back_keeps_the_stored_password(served):
    shown = json.loads(call(served, "GET", "/api/v1/config")[2])["team"]["url"]
    edited = shown.replace("/team", "/team2")  # the database edited, the password left as shown
    for url, stored in ((shown, TEAM_URL), (edited, TEAM_URL.replace("/team", "/team2"))):
        status, _, body = call(served, "POST", "/api/v1/config", {"team": {"url": url}})
        assert status == 200 and TEAM_PASSWORD not in body.decode()
        assert tomllib.loads((served["home"] / "config.toml").read_text())["team"]["url"] == stored


@pytest.mark.parametrize("query", ["since=9999-12-31T23:59:59-23:59", "until=0001-01-01T00:00Z",
                                   "since=0001-01-01", "until=9999-12-31"])
@pytest.mark.parametrize("route", ["/api/v1/spend", "/api/v1/report", "/api/v1/channels/edit", "/api/v1/team",
                                   "/api/v1/reminders"])
def test_extreme_dates_are_a_clear_400(served, route, query):
    status, headers, body = call(served, "GET", f"{route}?{query}")
    assert status == 400, body[:500]
    assert headers["content-type"] == "application/json"
    assert "out of range" in json.loads(body)["error"]


@pytest.mark.parametrize("token", [True, False])
def test_an_overlong_request_line_gets_a_json_error(served, token):
    status, headers, body = call(served, "GET", "/api/v1/status?x=" + "a" * (70 << 10), token=token)
    assert status in (400, 414)
    assert headers["content-type"] == "application/json"
    assert "<" not in body.decode() and json.loads(body)["error"]
