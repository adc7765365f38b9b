"""The tray lamp and the window: a Qt client of the service's local API.

Imports nothing of service/ but its shared layer `service/client/` (finding the service, its client,
the answers' types, the text filter) and nothing of models/: everything arrives over HTTP
(docs/api.md). The folder says what each part is:

- `app.py`, `tray.py`, `window.py`, `screenshot.py`: the program's entry points and its two faces;
- `tabs/`: the window's tabs, one module each;
- `present/`: what to show, computed in plain Python (no Qt), so tests call it without widgets:
  per topic, number formats (`fmt`), when a notice may speak (`coalesce`), the handoff prompt;
- `widgets/`: Qt building blocks the tabs and the tray share (charts, icons, theme, the popup);
- `connection/`: what talks to the service (the data source, the event stream, the supervisor of
  the service the tray starts and its restart policy);
- `platforms/`: what differs per system (start at login, the tray host).
"""
