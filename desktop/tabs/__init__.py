"""The window's tabs: one module per tab (overview, session, channel, history, files, settings, team), each
a `Tab` (tabs/base.py) that draws what its desktop/present/ module computes."""
