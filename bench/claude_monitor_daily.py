"""Daily totals from claude-monitor's own loader and aggregator, as JSON on stdout.

claude-monitor (PyPI `claude-monitor`, 4.0.0) is a live terminal UI with no
one-shot totals mode, so bench/peers.py runs this driver with the Python of
claude-monitor's own venv. It imports nothing of ctxlamp.

    <venv>/bin/python bench/claude_monitor_daily.py PROJECTS_DIR
"""
import json
import sys

from claude_monitor.data.aggregator import UsageAggregator


def main() -> int:
    projects = sys.argv[1]
    days = UsageAggregator(data_path=projects, aggregation_mode="daily", timezone="UTC").aggregate()
    out = [{
        "date": d["date"],
        "input_tokens": d["input_tokens"],
        "output_tokens": d["output_tokens"],
        "cache_creation_tokens": d["cache_creation_tokens"],
        "cache_read_tokens": d["cache_read_tokens"],
        "cost_usd": d["total_cost"],
        "entries": d["entries_count"],
    } for d in days]
    json.dump({"daily": out}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
