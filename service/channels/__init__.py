"""The three savings channels (edit, pinch, retrieval) and spend.

The meters here are pure: they take parsed transcript entries (dicts) and
return ChannelEvents or per-call records; file sizes, ledgers and databases are
read by the adapters in `ledgers.py` and handed in. service/report/scan.py walks
transcript folders (the file I/O of `ctxlamp report`).

    from service.channels import ChannelMeters
    meters = ChannelMeters(session_id="…", sidechain_file=False)
    events = meters.feed(entry_dict, file_sizes)   # file_sizes: path -> bytes or None
"""
from service.channels.events import ChannelEvent, LABELS
from service.channels.meters import ChannelMeters

__all__ = ["ChannelEvent", "ChannelMeters", "LABELS"]
