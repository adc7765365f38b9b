"""The tray lamp and the window: a Qt client of the service's local API.

Never imports service/ or models/: everything arrives over HTTP (docs/api.md).
Logic that decides what to show lives in plain-Python modules (desktop/present/,
coalesce, restart_policy, handoff_prompt) so tests call it without widgets.
"""
