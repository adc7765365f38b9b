"""Run the real Claude Code CLI through a scenario against the fake API, and keep what it wrote.

    python -m tests.fakeapi.scenario SCENARIO.json --out DIR [--home DIR] [--workspace DIR] [--dump]

A scenario (JSON):
  model       the default model of every run ("claude-sonnet-4-5" when absent)
  workspace   {relative path: text | {"generate_lines": N, "seed": S}}; "{workspace}" anywhere in the
              scenario is replaced by the workspace's absolute path
  settings    written to HOME/.claude/settings.json (hooks, status line, ...)
  mcp         an --mcp-config object given to every run
  env         extra environment for the CLI and the setup commands
  setup       shell commands run first, in the workspace, with the CLI's environment
  script      what the model answers (see tests.fakeapi.server)
  runs        [{"prompt", "resume": bool, "allowed_tools": "Read Edit ...", "model"}, ...]; a resumed run
              continues the session of the run before it (after /clear, the new one)

DIR gets results.jsonl (the CLI's JSON result of each run), api.jsonl (one line of usage per request),
projects/ (a copy of the transcripts) and, with --dump, dump.jsonl (every request in full).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.fakeapi.server import FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = ROOT / "tests" / "integration" / "e2e" / "install_claude.sh"
DEFAULT_MODEL = "claude-sonnet-4-5"
FAKE_KEY = "sk-ant-api03-fake-key-for-loopback-tests-0000000000"
# Variables of the calling session that would point the CLI elsewhere.
DROPPED_ENV = ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID", "CLAUDECODE", "ANTHROPIC_AUTH_TOKEN",
               "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_USE_BEDROCK",
               "CLAUDE_CODE_USE_VERTEX")


class ClaudeUnavailable(RuntimeError):
    """The CLI is not installed and could not be installed."""


def claude_binary(timeout: float = 900) -> str:
    """CLAUDE_BIN when it is an executable, else the binary tests/integration/e2e/install_claude.sh installs (pinned version)."""
    given = os.environ.get("CLAUDE_BIN")
    if given and os.access(given, os.X_OK):
        return given
    try:
        done = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClaudeUnavailable(str(exc)) from exc
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise ClaudeUnavailable(done.stderr.strip()[-800:] or f"install_claude.sh exited with {done.returncode}")
    return lines[-1]


def generated_source(lines: int, seed: int) -> str:
    """A plausible Python module of exactly `lines` lines, the same for the same seed."""
    rng = random.Random(seed)
    names = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    out = [f'"""Generated module {seed}."""', "import math", ""]
    n = 0
    while len(out) < lines:
        a, b = rng.choice(names), rng.choice(names)
        k = rng.randint(2, 97)
        body = rng.choice([f"    return x * {k} + {a}_offset(x)",
                           f"    return math.sqrt(abs(x)) + {k}",
                           f"    return [{b}(v) for v in range(x % {k})]",
                           f"    return x - {k}"])
        out += [f"def {a}_{n}(x):", f'    """{a.title()} step {n} of the {b} chain."""', body, ""]
        n += 1
    return "\n".join(out[:lines]) + "\n"


def substitute(value, workspace: Path):
    """The scenario with "{workspace}" replaced everywhere by the workspace's path."""
    if isinstance(value, str):
        return value.replace("{workspace}", str(workspace))
    if isinstance(value, list):
        return [substitute(v, workspace) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, workspace) for k, v in value.items()}
    return value


def build_workspace(files: dict, workspace: Path) -> None:
    workspace.mkdir(parents=True, exist_ok=True)
    for rel, spec in files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = spec if isinstance(spec, str) else generated_source(spec["generate_lines"], spec.get("seed", 0))
        path.write_text(text, encoding="utf-8")


def claude_config_dir(env: dict) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else Path(env["HOME"]) / ".claude"


def prepare_home(env: dict, workspace: Path, settings: dict | None) -> None:
    """The first-run answers given (onboarding, folder trust, the key), so the CLI asks nothing."""
    config = claude_config_dir(env)
    config.mkdir(parents=True, exist_ok=True)
    (config / "projects").mkdir(exist_ok=True)
    if settings:
        (config / "settings.json").write_text(json.dumps(settings, indent=1))
    state_file = config / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else Path(env["HOME"]) / ".claude.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    state.setdefault("hasCompletedOnboarding", True)
    state.setdefault("projects", {}).setdefault(str(workspace), {}).update(hasTrustDialogAccepted=True)
    approved = state.setdefault("customApiKeyResponses", {"approved": [], "rejected": []}).setdefault("approved", [])
    if FAKE_KEY[-20:] not in approved:
        approved.append(FAKE_KEY[-20:])
    state_file.write_text(json.dumps(state, indent=1))


def cli_env(home: Path, url: str, extra: dict | None = None, base: dict | None = None) -> dict:
    """The CLI's environment: this one minus what points elsewhere, plus the fake API and a fresh HOME."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in DROPPED_ENV}
    env.update(HOME=str(home), ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY=FAKE_KEY,
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1",
               ENABLE_TOOL_SEARCH="false")
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


def materialize(scenario: dict, workspace: Path) -> dict:
    """The scenario with its workspace path filled in, and the workspace written."""
    scenario = substitute(scenario, Path(workspace).resolve())
    build_workspace(scenario.get("workspace") or {}, Path(workspace))
    return scenario


def ready_home(scenario: dict, home: Path, workspace: Path, url: str, base_env: dict | None = None,
               timeout: float = 300) -> dict:
    """HOME prepared for the CLI and the scenario's setup commands run; returns the CLI's environment."""
    Path(home).mkdir(parents=True, exist_ok=True)
    env = cli_env(Path(home), url, scenario.get("env"), base_env)
    prepare_home(env, Path(workspace).resolve(), scenario.get("settings"))
    for command in scenario.get("setup") or []:
        done = subprocess.run(command, shell=True, cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"setup {command!r} failed ({done.returncode}): {done.stderr[-2000:]}")
    return env


def run_arguments(binary: str, run: dict, model: str, session: str | None, mcp_file: Path | None) -> list[str]:
    args = [binary, "-p", run["prompt"], "--output-format", "json", "--model", run.get("model") or model,
            "--permission-mode", "acceptEdits"]
    if run.get("allowed_tools"):
        args += ["--allowedTools", run["allowed_tools"]]
    if run.get("resume"):
        if not session:
            raise ValueError(f"run {run['prompt']!r} resumes, but no run before it gave a session")
        args += ["--resume", session]
    if mcp_file:
        args += ["--mcp-config", str(mcp_file)]
    return args


@dataclass
class Outcome:
    """What a scenario run left: the CLI's results, and where its files are."""
    results: list[dict]
    out: Path
    home: Path
    workspace: Path

    @property
    def projects(self) -> Path:
        return self.out / "projects"

    @property
    def api_log(self) -> Path:
        return self.out / "api.jsonl"


def run_scenario(scenario: dict | Path, out: Path, home: Path | None = None, workspace: Path | None = None,
                 claude_bin: str | None = None, dump: bool = False, timeout: float = 300,
                 base_env: dict | None = None) -> Outcome:
    """Run every run of `scenario` with the real CLI against a fake API started here; see the module doc."""
    if not isinstance(scenario, dict):
        scenario = json.loads(Path(scenario).read_text())
    binary = claude_bin or claude_binary()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in ("api.jsonl", "results.jsonl", "dump.jsonl"):
        (out / old).unlink(missing_ok=True)
    shutil.rmtree(out / "projects", ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="ctxlamp-scenario-") as scratch:
        home = Path(home) if home else Path(scratch) / "home"
        workspace = Path(workspace) if workspace else Path(scratch) / "demo-project"
        scenario = materialize(scenario, workspace)
        mcp_file = None
        if scenario.get("mcp"):
            mcp_file = Path(scratch) / "mcp.json"
            mcp_file.write_text(json.dumps(scenario["mcp"]))
        with FakeAnthropic(scenario.get("script"), log=out / "api.jsonl",
                           dump=out / "dump.jsonl" if dump else None) as api:
            env = ready_home(scenario, home, workspace, api.url, base_env, timeout)
            results, session = [], None
            model = scenario.get("model") or DEFAULT_MODEL
            for run in scenario.get("runs") or []:
                args = run_arguments(binary, run, model, session, mcp_file)
                done = subprocess.run(args, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout,
                                      stdin=subprocess.DEVNULL)
                try:
                    result = json.loads(done.stdout)
                except ValueError:
                    raise RuntimeError(f"run {run['prompt']!r} exited with {done.returncode} and no JSON result: "
                                       f"{done.stdout[-1500:]} {done.stderr[-1500:]}") from None
                results.append(result)
                with open(out / "results.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(result) + "\n")
                session = result.get("session_id") or session
        projects = claude_config_dir(env) / "projects"
        if projects.is_dir():
            shutil.copytree(projects, out / "projects")
        return Outcome(results, out, home, workspace)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Run the real Claude Code CLI through a scenario "
                                                 "against the project's fake Anthropic API.")
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="where results.jsonl, api.jsonl, projects/ go")
    parser.add_argument("--home", type=Path, help="HOME for the CLI (default: a fresh temporary folder)")
    parser.add_argument("--workspace", type=Path, help="the project folder (default: a fresh temporary folder)")
    parser.add_argument("--dump", action="store_true", help="also write every request to dump.jsonl")
    args = parser.parse_args(argv)
    try:
        outcome = run_scenario(args.scenario, args.out, home=args.home, workspace=args.workspace, dump=args.dump)
    except ClaudeUnavailable as exc:
        print(f"the Claude Code CLI is not available: {exc}", file=sys.stderr)
        return 3
    failed = [r for r in outcome.results if r.get("is_error")]
    print(f"{len(outcome.results)} runs, {len(failed)} failed; wrote {outcome.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
