"""What the tray and the window show, computed from the API's dicts: pure Python, no Qt, one module per
topic (lamp, overview, session, files, channel, history, settings, limits). The widgets in desktop/tabs/
and desktop/tray.py draw what these return."""
