"""The History tab: the archived parts of sessions as table rows, with column tips (pure Python, no Qt)."""
from __future__ import annotations

from desktop.present import fmt
from desktop.present.overview import model_name

SEGMENT_COLUMNS = [
    ("started_at", "Started"), ("session_id", "Session"), ("segment", "Part"), ("end_reason", "Ended by"),
    ("model", "Model"), ("calls", "Calls"), ("turns", "Prompts"), ("B", "Useful context"),
    ("L_peak", "Largest context"), ("g", "Growth per call"), ("rent_usd", "Rent"), ("laps", "Reminders"),
    ("restart_first", "Restart at reminder (est.)"), ("restart_best", "Best restart (est.)"),
    ("bill_in_usd", "Paid for input"), ("bill_out_usd", "Paid for output"), ("duration_s", "Duration"),
    ("models", "Models used (calls, spend)"),
]
SEGMENT_TIPS = {
    "segment": "A session is cut into parts at each compaction; the first part is 1.",
    "B": "Tokens of context a fresh session would need to rebuild (the useful part).",
    "L_peak": "The most context any call of this part re-read from the cache (tokens).",
    "g": "How much the context grew per call on average (tokens).",
    "rent_usd": "What calls paid to re-read context a fresh session would not need (dead weight).",
    "laps": "Reminders raised: each time the rent paid added up to about one restart's cost.",
    "restart_first": "An estimate: what a restart with a handoff at this part's first reminder would have saved "
                     "(the later calls re-read less, one rebuild of the useful context paid). Negative: it would "
                     "have cost.",
    "restart_best": "An estimate: the one restart that would have saved most, in hindsight, and after which call.",
}


def fmt_restart(figures, key: str) -> str:
    """A part's restart estimate: `$0.78 after call 57`, or why there is none."""
    if not isinstance(figures, dict):
        return "–"
    if key == "restart_first":
        call, usd = figures.get("first_reminder_call"), figures.get("first_reminder_usd")
        return "no reminder" if call is None else f"{fmt.usd(usd)} after call {fmt.count(call)}"
    call, usd = figures.get("best_call"), figures.get("best_usd")
    return "none would save" if call is None else f"{fmt.usd(usd)} after call {fmt.count(call)}"
END_WORDS = {"compact": "compaction", "rotation": "new session", "end": "end of transcript",
             "shutdown": "service stopped", "checkpoint": "service stopped"}


def fmt_models(models) -> str:
    """Each model a segment used (a /model switch), with its calls and spend: `Opus 4.5 ×3 $0.30; …`."""
    parts = []
    for m in models or []:
        name = model_name(m.get("model"))
        spend = float(m.get("bill_in_usd") or 0) + float(m.get("bill_out_usd") or 0)
        parts.append(f"{name} ×{m.get('calls', 0)} {fmt.usd(spend)}")
    return "; ".join(parts) or "–"


def segment_rows(segments: dict | list | None) -> list[list[str]]:
    items = segments.get("segments") if isinstance(segments, dict) else segments
    rows = []
    for s in items or []:
        row = []
        for key, _ in SEGMENT_COLUMNS:
            v = s.get(key)
            if key.startswith("restart_"):
                row.append(fmt_restart(s.get("restart_savings"), key))
            elif v is None:
                row.append("–")
            elif key.endswith("usd"):
                row.append(fmt.usd(v))
            elif key in ("B", "L_peak", "g"):
                row.append(f"{fmt.tokens(v)} tokens")
            elif key == "duration_s":
                row.append(fmt.duration(float(v)))
            elif key == "models":
                row.append(fmt_models(v))
            elif key == "session_id":
                row.append(str(v)[:8])
            elif key == "model":
                row.append(model_name(v))
            elif key == "segment":
                row.append(str(int(v) + 1))
            elif key == "end_reason":
                row.append(END_WORDS.get(str(v), str(v).replace("_", " ")))
            elif key in ("calls", "turns", "laps"):
                row.append(fmt.count(v))
            elif key == "started_at":
                row.append(fmt.when(v))
            else:
                row.append(str(v))
        rows.append(row)
    return rows
