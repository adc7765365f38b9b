"""The tray lamp: icon, tooltip, menu, its notices, and the window on demand.

Everything it shows comes from the event stream and the API (service/client/api.py);
decisions live in plain modules (desktop/present/, coalesce). No timer ticks: the icon
changes when a snapshot arrives, held notices and cache expiry each set one
single-shot timer, and the tray retry (no tray yet) backs off to minutes.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from desktop.present import fmt
from desktop.present.coalesce import DEFAULT_SNOOZE_S, ReminderCoalescer
from desktop.connection.datasource import ApiSource, DataError
from desktop.present.handoff_prompt import handoff_prompt
from desktop.widgets.icons import lamp_icon
from desktop.platforms.tray_host import tray_icon
from desktop.present.limits import IdleCacheNotice, LimitNotices, limits_text
from desktop.present.overview import budgets_text
from desktop.widgets.popup import ReminderPopup
from desktop.present.advice import notice_text, tooltip_text
from desktop.present.lamp import lamp_colour, menu_sessions, pick_followed
from desktop.present.settings import min_gap_seconds

TRAY_RETRY_S = (2, 5, 15, 30, 60, 120, 300)
NOTICE_MS = 8000  # how long the system shows a notice (it cannot be withdrawn when the lamp moves on)


class TrayController(QObject):
    """Owns the tray icon and reacts to the service's events."""

    notice_shown = Signal(dict, str)  # the notice (desktop/coalesce.py), and "tray" or "popup"
    quit_requested = Signal()

    def __init__(self, source=None, stream=None, supervisor=None, parent=None, open_window_without_tray=True):
        super().__init__(parent)
        self.source = source or ApiSource()
        self.stream = stream
        self.supervisor = supervisor
        self.sessions: dict[str, dict] = {}
        self.service_followed: str | None = None
        self.chosen: str | None = None
        self.down_reason: str | None = "Connecting to the ctxlamp service…"
        self.catching_up = False  # the service is still reading recent sessions (service.scan.state)
        self.coalescer = ReminderCoalescer()
        self.notices_shown = 0  # notices, not the rent's laps: the tray speaks once per stretch, again at red
        self.notice_lamp: tuple[str | None, str | None] = (None, None)  # the last notice's session and its lamp
        self.popup: ReminderPopup | None = None
        self.window = None
        self.open_window_without_tray = open_window_without_tray
        self._colour: str | None = None
        self._tray_attempt = 0

        self.tray = QSystemTrayIcon(self)
        self.menu = QMenu()
        self._build_menu()
        self.tray.setContextMenu(self.menu)
        self.tray.activated.connect(self._on_activated)
        self.tray.messageClicked.connect(self._notice_clicked)

        self._due_timer = QTimer(self)
        self._due_timer.setSingleShot(True)
        self._due_timer.timeout.connect(self._release_held)
        self._expiry_timer = QTimer(self)
        self._expiry_timer.setSingleShot(True)
        self._expiry_timer.timeout.connect(self.refresh)
        self._tray_timer = QTimer(self)
        self._tray_timer.setSingleShot(True)
        self._tray_timer.timeout.connect(self._try_show_tray)
        self.limits: dict | None = None  # plan limits last seen by Claude Code's status line
        self.idle_compaction = True  # Claude Code's idle compaction on (its settings, from the status)
        self.budgets: dict | None = None  # billed today and this month against the budgets
        self.limit_notices, self.idle_notice = LimitNotices(), IdleCacheNotice()
        self._idle_timer = QTimer(self)
        self._idle_timer.setSingleShot(True)
        self._idle_timer.timeout.connect(self._idle_cache_notices)

        if stream is not None:
            stream.snapshot.connect(self.on_snapshot)
            stream.reminder.connect(self.on_reminder)
            stream.connected.connect(self.on_connected)
            stream.service.connect(self.on_service)
            stream.limits.connect(self.on_limits)
            stream.budgets.connect(self.on_budgets)
            stream.followed.connect(self.on_followed)
            stream.disconnected.connect(self.on_disconnected)
        if supervisor is not None:
            supervisor.gave_up.connect(self.on_service_gave_up)
            supervisor.started.connect(lambda: stream.reconnect_now() if stream is not None else None)
        self.refresh()

    # ---------- tray presence ----------
    def start(self) -> bool:
        """Show the icon if a tray exists; otherwise retry slowly. Returns whether it is shown."""
        shown = self._try_show_tray()
        if not shown and self.open_window_without_tray:
            self.open_window()
        return shown

    def _try_show_tray(self) -> bool:
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray.show()
            return True
        delay = TRAY_RETRY_S[min(self._tray_attempt, len(TRAY_RETRY_S) - 1)]
        self._tray_attempt += 1
        self._tray_timer.start(delay * 1000)
        return False

    # ---------- state ----------
    @property
    def followed(self) -> str | None:
        return pick_followed(self.sessions, self.service_followed, self.chosen)

    @property
    def current(self) -> dict | None:
        if self.down_reason is not None:
            return None
        fid = self.followed
        return self.sessions.get(fid) if fid else None

    def colour(self) -> str:
        if self.down_reason is not None:
            return "grey"
        snap = self.current
        return lamp_colour(snap) if snap else "white"

    def tooltip(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if self.down_reason is not None:
            return tooltip_text(None, now, self.down_reason)
        snap = self.current
        if snap is None:
            if self.catching_up:
                return "ctxlamp — reading your recent Claude Code sessions…\nThe lamp lights up when they are read."
            return "ctxlamp — no live Claude Code session yet\nThe lamp lights up when a transcript grows."
        text = tooltip_text(snap, now, idle_compaction=self.idle_compaction)
        limits = limits_text(self.limits, now)
        budget = budgets_text(self.budgets)
        return "\n".join(t for t in (text, limits, budget) if t)

    def refresh(self) -> None:
        """Redraw icon (only when its colour changed) and tooltip; arm the cache-expiry single shot."""
        colour = self.colour()
        if colour != self._colour:
            self._colour = colour
            self.tray.setIcon(tray_icon(colour))
            if self.popup is not None:
                self.popup.setWindowIcon(lamp_icon(colour))
        now = time.time()
        self.tray.setToolTip(self.tooltip(now))
        self._expiry_timer.stop()
        snap = self.current
        exp = fmt.parse_time(((snap or {}).get("cache") or {}).get("expires_at"))
        if exp is not None and exp > now:
            self._expiry_timer.start(int(min(exp - now + 1, 86400) * 1000))
        self._arm_idle_notice(now)

    def set_status(self, status: dict) -> None:
        self.sessions = {s["session_id"]: s for s in status.get("sessions") or [] if s.get("session_id")}
        for sid, snap in self.sessions.items():  # the lamps as they stand now: shown, not announced
            self.coalescer.observe(sid, int(snap.get("segment") or 0), lamp_colour(snap), time.time(), quiet=True)
        self.service_followed = status.get("followed")
        self.idle_compaction = (status.get("claude_code") or {}).get("idle_compaction") is not False
        self.down_reason = None
        self.on_limits(status.get("limits"))
        self.budgets = status.get("budgets") if isinstance(status.get("budgets"), dict) else None
        self.on_service(status.get("service") or {})

    def on_service(self, block: dict) -> None:
        """The service block (with status, and as its own event when the startup reading ends)."""
        self.catching_up = (block.get("scan") or {}).get("state") == "catching_up"
        self.refresh()

    # ---------- slots: the event stream ----------
    def on_connected(self) -> None:
        if self.supervisor is not None and self.supervisor.given_up:
            self.supervisor.adopt_external()  # someone started a service by hand: use it
        try:
            self.set_status(self.source.status())
        except DataError as exc:
            self.down_reason = f"The service answered the stream but not /status: {exc}"
            self.refresh()
            return
        try:
            cfg = self.source.config()
            self.coalescer.min_gap_s = min_gap_seconds(cfg, self.coalescer.min_gap_s)
            self.limit_notices.configure(cfg)
            self.idle_notice.configure(cfg)
        except DataError:
            pass
        if self.window is not None and self.window.isVisible():
            self.window.load(self.followed)

    def on_disconnected(self, reason: str) -> None:
        if self.supervisor is not None and self.supervisor.given_up:
            return  # the give-up message stays
        if reason.startswith("the ctxlamp service is not running: "):  # its start failed: why, in its words
            self.down_reason = f"{reason[:1].upper()}{reason[1:]} Waiting for it…"
        else:
            self.down_reason = f"The ctxlamp service is not reachable ({reason}). Reconnecting…"
        self.refresh()
        if self.supervisor is not None and self.supervisor.external:
            self.supervisor.ensure_running()  # an external service went away: start our own

    def on_service_gave_up(self, message: str) -> None:
        self.down_reason = message
        self.refresh()
        self._notify("ctxlamp: service down", message)

    def on_snapshot(self, snap: dict) -> None:
        sid = snap.get("session_id")
        if not sid:
            return
        self.sessions[sid] = snap
        self.down_reason = None
        self.refresh()
        self._retire_notice(sid, snap)
        if self.window is not None:
            self.window.on_live_snapshot(snap)
        self.coalescer.observe(sid, int(snap.get("segment") or 0), lamp_colour(snap), time.time())

    def on_followed(self, data: dict) -> None:
        """The service follows another session: the lamp, the tooltip and the open window show it, unless the
        user chose one in the menu (decision 496)."""
        sid = data.get("session_id")
        if sid is not None and not isinstance(sid, str):
            return
        before = self.followed
        self.service_followed = sid
        self.refresh()
        now = self.followed
        if now != before and now is not None and self.window is not None and self.window.isVisible():
            self.window.load(now, self.sessions.get(now))

    def on_limits(self, limits: dict | None) -> None:
        """The plan limits (status, or a `limits` event): tooltip and menu, and a notice per threshold passed."""
        if not isinstance(limits, dict):
            return
        self.limits = limits
        for title, body in self.limit_notices.offer(limits):
            self._notify(title, body)
        self.tray.setToolTip(self.tooltip())

    def on_budgets(self, block: dict) -> None:
        """The service worked the budgets out again: tooltip, and its new notices (each given once by it)."""
        self.budgets = block
        for n in block.get("notices") or []:
            if isinstance(n, dict) and isinstance(n.get("title"), str) and isinstance(n.get("body"), str):
                self._notify(n["title"][:120], n["body"][:400])
        self.tray.setToolTip(self.tooltip())

    def _arm_idle_notice(self, now: float) -> None:
        self._idle_timer.stop()
        due = self.idle_notice.next_due(self.sessions, now)
        if due is not None:
            self._idle_timer.start(int(max(0.0, min(due - now, 86400)) * 1000))

    def _idle_cache_notices(self) -> None:
        """An idle session's cache is about to expire: say what the next message will re-write."""
        now = time.time()
        for title, body in self.idle_notice.due(self.sessions, self.limits, now):
            self._notify(title, body)
        self._arm_idle_notice(now)

    def on_reminder(self, reminder: dict, now: float | None = None) -> None:
        """A rent lap: a notice if it is the stretch's first (desktop/coalesce.py), else only the figures."""
        now = time.time() if now is None else now
        snap = self.sessions.get(str(reminder.get("session_id")))
        show = self.coalescer.offer(reminder, now, lamp_colour(snap) if snap else None)
        if show is not None:
            self.show_notice(show)
        self._arm_due(now)
        self.tray.setToolTip(self.tooltip(now))

    def _arm_due(self, now: float) -> None:
        due = self.coalescer.next_due()
        self._due_timer.stop()
        if due is not None:
            self._due_timer.start(int(max(0.0, due - now) * 1000) + 50)

    def _release_held(self) -> None:
        now = time.time()
        for told in self.coalescer.due(now):
            self.show_notice(told)
        self._arm_due(now)

    # ---------- notices ----------
    def show_notice(self, told: dict) -> str:
        """Say one notice: two lines in a tray message (a click copies the handoff prompt and opens the
        Session tab with the why), or the fallback popup with its Why? button."""
        snap = self.sessions.get(str(told.get("session_id")))
        text = notice_text(told, snap, several=len(self.sessions) > 1)
        self.last_reminder = told
        self.notices_shown += 1
        self.notice_lamp = (str(told.get("session_id")), lamp_colour(snap) if snap else None)
        if self.tray.isVisible() and self.tray.supportsMessages():
            # a notice speaks of a move: its icon claims no colour (the lamp shows the colour); the system's
            # notice cannot be taken back when the lamp moves on: it stays up for NOTICE_MS only
            self.tray.showMessage(text.title, text.body, QSystemTrayIcon.MessageIcon.Information, NOTICE_MS)
            via = "tray"
        else:
            self._ensure_popup().show_message(text.title, text.body, text.why)
            via = "popup"
        self.notice_shown.emit(told, via)
        return via

    def _retire_notice(self, sid: str, snap: dict) -> None:
        """A notice shown in the popup goes when its session's lamp changes colour: a green notice under an
        amber lamp would say what is no longer so (a next notice, if the rule gives one, says the new)."""
        shown_for, colour = self.notice_lamp
        if sid == shown_for and colour is not None and lamp_colour(snap) != colour:
            self.notice_lamp = (None, None)
            if self.popup is not None and self.popup.isVisible():
                self.popup.hide()

    def _notice_clicked(self) -> None:
        """A click on the tray's notice: the handoff prompt on the clipboard, the why in the Session tab."""
        self._handoff_for_reminder()
        self.open_window("session")

    def _ensure_popup(self) -> ReminderPopup:
        if self.popup is None:
            self.popup = ReminderPopup()
            self.popup.handoff_requested.connect(self._handoff_for_reminder)
            self.popup.snooze_requested.connect(lambda: self.snooze())
        return self.popup

    def snooze(self, session_id: str | None = None, duration_s: float = DEFAULT_SNOOZE_S) -> None:
        """No notices for this session for a while (the lamp still shows)."""
        rem = getattr(self, "last_reminder", None) or {}
        sid = session_id or rem.get("session_id") or self.followed
        if sid:
            self.coalescer.snooze(sid, time.time(), duration_s)
            self._notify("ctxlamp", f"Notices snoozed for {int(duration_s // 60)} minutes.", quiet=True)

    def set_paused(self, paused: bool) -> None:
        self.coalescer.set_paused(paused)
        self.pause_action.setChecked(paused)

    def _handoff_for_reminder(self) -> str:
        rem = getattr(self, "last_reminder", None) or {}
        return self.prepare_handoff(rem.get("session_id"))

    def prepare_handoff(self, session_id: str | None = None) -> str:
        """Copy a ready `handoff_save` prompt (the followed session's, or the one named) to the clipboard."""
        snap = self.sessions.get(session_id or "") or self.sessions.get(self.followed or "")
        series = None
        if snap is not None:
            try:
                series = self.source.series(snap["session_id"])
            except DataError:
                series = None
        text = handoff_prompt(snap, series)
        QGuiApplication.clipboard().setText(text)
        self._notify("ctxlamp", "A handoff prompt is on the clipboard: paste it into Claude Code.", quiet=True)
        return text

    def _notify(self, title: str, body: str, quiet: bool = False) -> None:
        if self.tray.isVisible() and self.tray.supportsMessages():
            self.tray.showMessage(title, body, QSystemTrayIcon.MessageIcon.Information, 6000)
        elif not quiet:
            self._ensure_popup().show_message(title, body)

    # ---------- menu ----------
    def _build_menu(self) -> None:
        m = self.menu
        self.header_action = m.addAction("ctxlamp")
        self.header_action.setEnabled(False)
        self.reason_actions: list[QAction] = []  # why the service is down (update_menu)
        self.cache_action = m.addAction("")
        self.cache_action.setEnabled(False)
        self.limits_action = m.addAction("")
        self.limits_action.setEnabled(False)
        self.limits_action.setVisible(False)
        m.addSeparator()
        self.sessions_anchor = m.addSeparator()
        self.session_group = QActionGroup(m)
        self.session_group.setExclusive(True)
        self.session_actions: list[QAction] = []
        self.open_action = m.addAction("Open window", self.open_window)
        self.handoff_action = m.addAction("Prepare handoff", lambda: self.prepare_handoff())
        self.snooze_action = m.addAction("Snooze notices (30 min)", lambda: self.snooze(self.followed))
        self.pause_action = m.addAction("Pause notices")
        self.pause_action.setCheckable(True)
        self.pause_action.toggled.connect(self.coalescer.set_paused)
        self.retry_action = m.addAction("Restart the service", self._retry_service)
        m.addSeparator()
        self.settings_action = m.addAction("Settings", lambda: self.open_window("settings"))
        self.quit_action = m.addAction("Quit", self.quit_requested.emit)
        m.aboutToShow.connect(self.update_menu)

    def update_menu(self, now: float | None = None) -> None:
        """Fill the menu when it opens: sessions, and the cache countdown computed right now."""
        now = time.time() if now is None else now
        self.header_action.setText(self.tooltip(now).splitlines()[0])
        self._show_reason()
        snap = self.current
        cache = (snap or {}).get("cache") or {}
        exp = fmt.parse_time(cache.get("expires_at"))
        if exp is None:
            self.cache_action.setVisible(False)
        else:
            self.cache_action.setVisible(True)
            left = exp - now
            self.cache_action.setText(
                f"Cache expires in {fmt.duration(left)} (then your next message rewrites {fmt.usd(cache.get('cold_rewrite_usd'))})"
                if left > 0 else f"Cache expired: your next message rewrites {fmt.usd(cache.get('cold_rewrite_usd'))}")
        limits = limits_text(self.limits, now)
        self.limits_action.setVisible(limits is not None)
        self.limits_action.setText(f"Plan: {limits}" if limits else "")
        for a in self.session_actions:
            self.menu.removeAction(a)
            self.session_group.removeAction(a)
            a.deleteLater()
        self.session_actions = []
        rows = menu_sessions(self.sessions, self.followed) if self.down_reason is None else []
        before = self.open_action
        for sid, label, checked in rows:
            a = QAction(label, self.menu)
            a.setCheckable(True)
            a.setChecked(checked)
            a.triggered.connect(lambda _=False, s=sid: self.follow(s))
            self.session_group.addAction(a)
            self.menu.insertAction(before, a)
            self.session_actions.append(a)
        if rows:
            sep = QAction(self.menu)
            sep.setSeparator(True)
            self.menu.insertAction(before, sep)
            self.session_actions.append(sep)
        self.retry_action.setVisible(bool(self.supervisor is not None and self.supervisor.given_up))
        self.handoff_action.setEnabled(self.current is not None)

    def _show_reason(self) -> None:
        """Why the service is down, under the menu's header, in lines a menu can show."""
        import textwrap

        for a in self.reason_actions:
            self.menu.removeAction(a)
            a.deleteLater()
        self.reason_actions = []
        for line in textwrap.wrap(self.down_reason or "", 64, break_on_hyphens=False)[:8]:
            a = QAction(line, self.menu)
            a.setEnabled(False)
            self.menu.insertAction(self.cache_action, a)
            self.reason_actions.append(a)

    def follow(self, session_id: str) -> None:
        self.chosen = session_id
        self.refresh()
        if self.window is not None:
            self.window.load(session_id, self.sessions.get(session_id))

    def _retry_service(self) -> None:
        if self.supervisor is not None:
            self.down_reason = "Restarting the ctxlamp service…"
            self.refresh()
            self.supervisor.retry()

    # ---------- window ----------
    def open_window(self, tab: str | None = None):
        from desktop.window import TAB_NAMES, MainWindow

        if self.window is None:
            self.window = MainWindow(self.source, self.followed)
            self.window.snapshot_changed.connect(self.on_snapshot)
        self.window.load(self.followed, self.current)
        if tab in TAB_NAMES:
            self.window.tabs.setCurrentIndex(TAB_NAMES.index(tab))
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()
        return self.window

    def _on_activated(self, reason) -> None:
        if reason in (QSystemTrayIcon.ActivationReason.Trigger, QSystemTrayIcon.ActivationReason.DoubleClick):
            self.open_window()

    def shutdown(self) -> None:
        self._due_timer.stop()
        self._expiry_timer.stop()
        self._tray_timer.stop()
        self._idle_timer.stop()
        self.tray.hide()
        if self.popup is not None:
            self.popup.close()
        if self.window is not None:
            self.window.close()

