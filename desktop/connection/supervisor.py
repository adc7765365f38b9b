"""Start and supervise `ctxlamp serve` as a child of the tray.

If a service already runs (api.json present and /health answers) the tray
uses it and starts nothing. A child that dies is restarted after a backoff,
at most 3 times in 10 minutes (RestartPolicy); then the tray says so.
Event-driven: QProcess signals and single-shot timers, no polling.
"""
from __future__ import annotations

import collections
import sys
import time

from PySide6.QtCore import QObject, QProcess, QTimer, Signal

from service.client import start_failure
from service.client.api import ApiClient
from service.client.paths import app_paths
from desktop.connection.restart_policy import RestartPolicy


def service_command() -> tuple[str, list[str]]:
    if getattr(sys, "frozen", False):  # the packaged build: the same executable runs every command
        return sys.executable, ["serve"]
    from service.client.own_python import module_argv

    python, *args = module_argv("service.cli", "serve")  # the user's folder never shadows ctxlamp
    return python, args


class ServiceSupervisor(QObject):
    started = Signal()            # a child was (re)started: the event stream should reconnect now
    gave_up = Signal(str)         # restarts exhausted: why, for the tray's grey lamp
    child_exited = Signal(str)    # the child died (a restart may follow)

    def __init__(self, parent=None, policy: RestartPolicy | None = None, command=None):
        super().__init__(parent)
        self.policy = policy or RestartPolicy()
        self.command = command or service_command()
        self.process: QProcess | None = None
        self.mode = "none"  # "external": someone else's service; "child": ours, supervised
        self.given_up = False
        self._stopping = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._restart_timer = QTimer(self)
        self._restart_timer.setSingleShot(True)
        self._restart_timer.timeout.connect(self._spawn)

    @property
    def owns_child(self) -> bool:
        """We supervise a child (running, or dead with a restart pending or given up)."""
        return self.mode == "child"

    @property
    def external(self) -> bool:
        return self.mode == "external"

    def ensure_running(self) -> str:
        """Use a live service, else start one. Returns "external", "started" or "running"."""
        if self.mode == "child" and (self.process is not None or self._restart_timer.isActive() or self.given_up):
            return "running"  # supervised already: the restart policy decides, not the caller
        if ApiClient(timeout=1.5).alive():
            self.mode = "external"
            return "external"
        self.mode = "child"
        self.given_up = False
        self._spawn()
        return "started"

    def _spawn(self) -> None:
        if self._stopping:
            return
        proc = QProcess(self)
        program, args = self.command
        proc.setProgram(program)
        proc.setArguments(args)
        proc.setStandardOutputFile(QProcess.nullDevice())
        proc.readyReadStandardError.connect(lambda p=proc: self._read_stderr(p))
        proc.finished.connect(lambda code, status, p=proc: self._on_finished(p, code))
        proc.errorOccurred.connect(lambda err, p=proc: self._on_error(p, err))
        self.process = proc
        proc.start()
        self.started.emit()

    def _read_stderr(self, proc: QProcess) -> None:
        text = bytes(proc.readAllStandardError().data()).decode("utf-8", "replace")
        for line in text.splitlines():
            if line.strip():
                self._stderr.append(line.strip())

    def _on_error(self, proc: QProcess, err) -> None:
        if err == QProcess.ProcessError.FailedToStart:
            self._on_finished(proc, -1)

    def _on_finished(self, proc: QProcess, code: int) -> None:
        if proc is not self.process or self._stopping:
            return
        self.process = None
        proc.deleteLater()
        last = self._stderr[-1] if self._stderr else f"exit code {code}"
        self.child_exited.emit(last)
        if ApiClient(timeout=1.5).alive():  # another service took over (e.g. started by hand)
            self.mode = "external"
            return
        if code == start_failure.CANNOT_START:  # its settings (or folder) stop it: a restart would fail alike
            self.given_up = True
            why = start_failure.not_running(app_paths()) or f"the ctxlamp service cannot start: {last}"
            self.gave_up.emit(f"{why[:1].upper()}{why[1:]} Then choose “Restart the service” in this menu.")
            return
        delay = self.policy.on_exit(time.monotonic())
        if delay is None:
            self.given_up = True
            self.gave_up.emit(
                f"The ctxlamp service stopped {self.policy.max_restarts + 1} times within "
                f"{int(self.policy.window_s // 60)} minutes and is not restarted again. "
                f"Last message: {last}. Run `ctxlamp serve` in a terminal to see why.")
            return
        self._restart_timer.start(int(delay * 1000))

    def retry(self) -> None:
        """The user asked to try again after the tray gave up."""
        self.policy.reset()
        self.given_up = False
        self.mode = "none"
        self.ensure_running()

    def adopt_external(self) -> None:
        """A service we did not start answers: stop supervising and use it."""
        self.given_up = False
        self.policy.reset()
        self.mode = "external"

    def stop(self, wait_ms: int = 5000) -> None:
        """Stop the child we started (an external service is left alone)."""
        self._stopping = True
        self._restart_timer.stop()
        proc, self.process = self.process, None
        if proc is not None and proc.state() != QProcess.ProcessState.NotRunning:
            proc.terminate()
            if not proc.waitForFinished(wait_ms):
                proc.kill()
                proc.waitForFinished(1000)
