"""Schemathesis against the running service's own /api/v1/openapi.json: no request makes it fail with a 5xx.

The quick run is the coverage phase (boundary values, missing and wrong-typed
parameters, unsupported methods: a couple of seconds); the slow one adds the
fuzzing and stateful phases within a time budget. The SSE stream is left out
(a test client would wait for it to end); tests/integration/reliability/test_api_door.py
covers it. Failures are read from the JUnit report: a `<failure>` is a finding;
an `<error>` raised inside schemathesis itself (its known hypothesis flakiness)
is shown but not counted, and the service must still answer afterwards.
"""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.harness import LONG_SESSION, Service, append_lines, service_env

pytest.importorskip("schemathesis", reason="schemathesis is a test dependency (pip install schemathesis)")
ST = Path(sys.executable).with_name("st")
# schemathesis's own failures (hypothesis's engine raising inside itself, e.g. an IndexError in its
# target optimiser), not an answer of the service
INTERNAL = ("Inconsistent results", "FlakyFailure", "Unsatisfiable", "Unsupported regex", "Failed to generate",
            "hypothesis/internal/conjecture/")


def run_schemathesis(tmp_path: Path, phases: str, max_examples: int, max_time: int) -> None:
    home, claude = tmp_path / "home", tmp_path / "claude"
    proj = claude / "projects" / "-home-user-demo-project"
    proj.mkdir(parents=True)
    home.mkdir()
    append_lines(LONG_SESSION.read_bytes().splitlines(keepends=True)[:300], proj / LONG_SESSION.name)
    junit = tmp_path / "schemathesis.xml"
    with Service(service_env(home, claude), home) as svc:
        base = f"http://127.0.0.1:{svc.api.port}"
        cmd = [str(ST), "run", f"{base}/api/v1/openapi.json", "-H", f"Authorization: Bearer {svc.info['token']}",
               "--checks", "not_a_server_error", "--phases", phases, "--max-examples", str(max_examples),
               "--max-time", str(max_time), "--seed", "20261129", "--workers", "2", "--no-color",
               "--exclude-path", "/api/v1/events", "--request-timeout", "20",
               "--report", "junit", "--report-junit-path", str(junit)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=max_time + 120,
                             env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
        assert junit.exists(), out.stdout[-3000:] + out.stderr[-3000:]
        failures, internal = [], []
        for case in ET.parse(junit).getroot().iter("testcase"):
            for node in case:
                text = (node.get("message") or "") + (node.text or "")
                if node.tag == "failure":
                    failures.append(f"{case.get('name')}: {text[:1500]}")
                elif node.tag == "error":
                    (internal if any(w in text for w in INTERNAL) else failures).append(
                        f"{case.get('name')}: {text[:300]}")
        if internal:
            print("schemathesis internal errors (not counted):", *internal, sep="\n  ")
        assert not failures, "\n\n".join(failures) + "\n\n" + out.stdout[-4000:]
        assert svc.api.get("/api/v1/health")["ok"] is True
        assert svc.proc.poll() is None


def test_schemathesis_coverage_phase_finds_no_server_error(tmp_path):
    run_schemathesis(tmp_path, "coverage", max_examples=10, max_time=60)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_schemathesis_fuzzing_and_stateful_find_no_server_error(tmp_path):
    run_schemathesis(tmp_path, "examples,coverage,fuzzing,stateful", max_examples=25, max_time=110)
