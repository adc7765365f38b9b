"""What the tray and the window show, computed from the API's answers: pure Python, no Qt. One module
per topic (lamp, overview, session, files, channel, history, settings, limits), the number formats
(`fmt`), when a notice may speak (`coalesce`) and the handoff prompt. The widgets in desktop/tabs/ and
desktop/tray.py draw what these return."""
