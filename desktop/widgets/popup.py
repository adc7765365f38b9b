"""The fallback notice where the tray cannot show messages: a small frameless
always-on-top window that never takes focus: two lines, a handoff, the why one click away, snooze."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget


class ReminderPopup(QWidget):
    handoff_requested = Signal()
    snooze_requested = Signal()

    FLAGS = (Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint
             | Qt.WindowType.WindowDoesNotAcceptFocus)

    def __init__(self, parent=None):
        super().__init__(parent, self.FLAGS)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setObjectName("ctxlampReminder")
        frame = QFrame(self)
        frame.setObjectName("card")
        frame.setStyleSheet(
            "#card { background: #fff8e6; border: 2px solid #e69500; border-radius: 8px; }"
            "QLabel { color: #222; } QPushButton { padding: 4px 10px; }")
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # a project's name is shown as written, never as markup
        self.title.setStyleSheet("font-weight: bold;")
        self.title.setWordWrap(True)
        self.body = QLabel()
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setWordWrap(True)
        self.why = QLabel()
        self.why.setTextFormat(Qt.TextFormat.PlainText)
        self.why.setWordWrap(True)
        self.why.setStyleSheet("color: #444;")
        self.why.hide()
        self.handoff = QPushButton("Prepare handoff")
        self.why_button = QPushButton("Why?")
        self.why_button.setCheckable(True)
        self.snooze = QPushButton("Snooze")
        self.close_button = QPushButton("×")
        self.close_button.setFixedWidth(28)
        for b in (self.handoff, self.why_button, self.snooze, self.close_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.handoff)
        row.addWidget(self.why_button)
        row.addWidget(self.snooze)
        row.addWidget(self.close_button)
        inner = QVBoxLayout(frame)
        inner.addWidget(self.title)
        inner.addWidget(self.body)
        inner.addWidget(self.why)
        inner.addLayout(row)
        outer = self._outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(frame)
        self.setFixedWidth(440)  # a notice's two lines stay two lines
        self.handoff.clicked.connect(self._handoff)
        self.snooze.clicked.connect(self._snooze)
        self.close_button.clicked.connect(self.hide)
        self.why_button.toggled.connect(self._show_why)

    def show_message(self, title: str, body: str, why: str = "") -> None:
        self.title.setText(title)
        self.body.setText(body)
        self.why.setText(why)
        self.why_button.setVisible(bool(why))
        self.why_button.setChecked(False)
        self._show_why(False)
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            geo = screen.availableGeometry()
            self.move(geo.right() - self.width() - 16, geo.top() + 16)
        self.show()

    def _show_why(self, shown: bool) -> None:
        self.why.setVisible(shown)
        self._fit()

    def _fit(self) -> None:
        self._outer.activate()  # word-wrapped labels: size for the fixed width, not adjustSize's guess
        self.resize(self.width(), self._outer.totalHeightForWidth(self.width()))

    def _handoff(self) -> None:
        self.hide()
        self.handoff_requested.emit()

    def _snooze(self) -> None:
        self.hide()
        self.snooze_requested.emit()
