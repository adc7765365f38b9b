"""The History tab: the archived stretches of work as table rows, with column tips (pure Python, no Qt)."""
from __future__ import annotations

from desktop.present import fmt
from desktop.present.lamp import project_name
from desktop.present.overview import model_name

# headers of two short lines and cells without repeated units, so every column fits a 1100-pixel window
SEGMENT_COLUMNS = [
    ("started_at", "Started"), ("session_id", "Project\n· stretch"), ("end_reason", "Ended by"),
    ("model", "Model"), ("calls", "Calls"), ("turns", "Prompts"), ("B", "Useful\ntokens"),
    ("L_peak", "Largest\ncontext"), ("g", "Growth\nper call"), ("rent_usd", "Rent"), ("laps", "Restarts'\nworth"),
    ("restart_first", "Restart at\nnotice (est.)"), ("restart_best", "Best restart\n(est.)"),
    ("bill_usd", "Paid"), ("duration_s", "Lasted"), ("models", "Models\n(calls, $)"),
]
SEGMENT_TIPS = {
    "B": "Tokens of context a fresh session would need to rebuild (the useful part).",
    "L_peak": "The most context any call of this stretch re-read from the cache (tokens).",
    "g": "How much the context grew per call on average (tokens).",
    "rent_usd": "What calls paid to re-read context a fresh session would not need (dead weight).",
    "laps": "How many times the rent paid added up to a restart's cost; the tray gave its notice at the first.",
    "restart_first": "An estimate: what a restart with a handoff at this stretch's notice would have saved "
                     "(the later calls re-read less, one rebuild of the useful context paid). Negative: it would "
                     "have cost.",
    "restart_best": "An estimate: the one restart that would have saved most, in hindsight, and after which call.",
    "started_at": "When the stretch's first call was made.",
    "bill_usd": "What the API billed for the stretch's calls: input and output.",
    "session_id": "The session's project folder and which stretch of work in it (a session is cut into stretches "
                  "at each compaction; the first is 1).",
}


def fmt_restart(figures, key: str) -> str:
    """A stretch's restart estimate: `$0.78, call 57` (a restart after call 57), or why there is none."""
    if not isinstance(figures, dict):
        return "–"
    if key == "restart_first":
        call, usd = figures.get("first_reminder_call"), figures.get("first_reminder_usd")
        return "no notice" if call is None else f"{fmt.usd(usd)}, call {fmt.count(call)}"
    call, usd = figures.get("best_call"), figures.get("best_usd")
    return "none saves" if call is None else f"{fmt.usd(usd)}, call {fmt.count(call)}"
END_WORDS = {"compact": "compaction", "rotation": "new session", "end": "transcript end",
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
            if key == "bill_usd":
                row.append(fmt.usd(float(s.get("bill_in_usd") or 0) + float(s.get("bill_out_usd") or 0)))
            elif key.startswith("restart_"):
                row.append(fmt_restart(s.get("restart_savings"), key))
            elif v is None:
                row.append("–")
            elif key.endswith("usd"):
                row.append(fmt.usd(v))
            elif key in ("B", "L_peak", "g"):
                row.append(fmt.tokens(v))
            elif key == "duration_s":
                row.append(fmt.duration(float(v)))
            elif key == "models":
                row.append(fmt_models(v))
            elif key == "session_id":
                row.append(f"{project_name(s.get('project'))} · {int(s.get('segment') or 0) + 1}")
            elif key == "model":
                row.append(model_name(v))
            elif key == "segment":
                row.append(str(int(v) + 1))
            elif key == "end_reason":
                row.append(END_WORDS.get(str(v), str(v).replace("_", " ")))
            elif key in ("calls", "turns", "laps"):
                row.append(fmt.count(v))
            elif key == "started_at":
                row.append(fmt.when(v, short=True))
            else:
                row.append(str(v))
        rows.append(row)
    return rows
