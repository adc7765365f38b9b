"""Turn records: what history search and locate look through.

Pure: parsed transcript entries (dicts) in, one record per turn out. No I/O, no
clock, no database; the service feeds it and stores what comes out.

A turn starts at a human prompt: a `user` entry whose content is a string or has
a text block, that is not meta (`isMeta`), not a compaction summary
(`isCompactSummary`), not a tool result, not a sidechain, and not the echo of a
slash command (`<command-name>`, `<local-command-stdout>`,
`<local-command-caveat>`), and not a message the client wrote itself (a
background task's `<task-notification>`, `promptSource: "system"`, the `!`
shell-mode echoes `<bash-input>`/`<bash-stdout>`, which start no model turn).
Everything up to the next such prompt belongs to it: the paths read (Read) and changed (Edit, MultiEdit, Write, NotebookEdit), and the
tokens and cost of its API calls. One API response is written as several lines
with the same `message.id`; they are folded keeping the largest figures, so a call
is counted once and its output is not undercounted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from service.engine.parse import human_prompt
from service.engine.prices import call_label, modifier_value

READ_TOOLS = frozenset({"Read"})
CHANGE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
SYSTEM_TEXTS = ("<task-notification>", "<bash-input>", "<bash-stdout>", "<bash-stderr>")
NOT_PROMPTS = ("[Request interrupted by user",)
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                "cache_creation_1h_input_tokens")  # the last: the 1-hour share of cache writes
PREVIEW_CHARS = 160
PROMPT_CHARS = 4000
REPLY_CHARS = 600

# cost_of(model, usage[, geo]) -> USD or None when the model is not priced; the model is the call's label
# (`<model>-fast` for a fast call) and geo its usage.inference_geo.
CostFn = Callable[..., "float | None"]


@dataclass
class TurnRecord:
    """One turn of one session, as history keeps it."""

    session_id: str | None
    index: int                      # 0-based position of the turn in its session
    prompt_uuid: str | None
    started_at: str | None          # ISO timestamp of the prompt entry
    ended_at: str | None            # timestamp of the turn's last entry
    prompt: str | None              # the prompt text (capped); None when prompts are not stored
    preview: str | None             # first line-ish of the prompt, for lists
    reply: str | None               # the last assistant text of the turn (capped); None when not stored
    paths_read: list[str] = field(default_factory=list)
    paths_changed: list[str] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float | None = 0.0    # None when some call's model is not priced
    models: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _content(entry: dict) -> Any:
    msg = entry.get("message")
    return msg.get("content") if isinstance(msg, dict) else None


def prompt_text(entry: dict) -> str | None:
    """The human prompt carried by this entry, or None when it is not one.

    The engine's turn boundary (engine.parse.human_prompt), minus what Claude Code
    injects as user text without a human typing it (task notifications, shell
    echoes, interruption markers): those are not worth a history record.
    """
    if not isinstance(entry, dict) or entry.get("isSidechain"):
        return None
    if entry.get("toolUseResult") is not None or entry.get("promptSource") == "system":
        return None
    text = human_prompt(entry)
    if text is None:
        return None
    stripped = text.lstrip()
    if stripped.startswith(NOT_PROMPTS) or stripped.startswith(SYSTEM_TEXTS):
        return None
    return text


def make_preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1].rstrip() + "…"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class TurnBuilder:
    """Incremental: feed entries in file order, collect the turns that closed.

    `feed` returns the turns a new prompt closed; `finish` returns the open one.
    `store_prompts=False` keeps prompt and reply text out of the records.
    """

    def __init__(self, *, store_prompts: bool = True, cost_of: CostFn | None = None, session_id: str | None = None):
        self.store_prompts = store_prompts
        self.cost_of = cost_of
        self.session_id = session_id
        self._next_index = 0
        self._turn: TurnRecord | None = None
        self._calls: dict[str, tuple[str, dict[str, int]]] = {}   # message.id -> (model label, usage max)
        self._geos: dict[str, Any] = {}                            # message.id -> usage.inference_geo
        self._pending: dict[str, tuple[str, str]] = {}             # tool_use id -> (tool, path)
        self._recorded: set[tuple[bool, str]] = set()              # (changed, path) in the open turn's lists

    # -- public -------------------------------------------------------------
    def feed(self, entry: dict) -> list[TurnRecord]:
        if not isinstance(entry, dict):
            return []
        closed: list[TurnRecord] = []
        text = prompt_text(entry)
        if text is not None:
            done = self._close()
            if done is not None:
                closed.append(done)
            self._open(entry, text)
            return closed
        turn = self._turn
        if turn is None or entry.get("isSidechain"):
            return closed
        kind = entry.get("type")
        if kind == "assistant":
            self._assistant(entry, turn)
        elif kind == "user":
            self._tool_results(entry, turn)
        ts = entry.get("timestamp")
        if isinstance(ts, str):
            turn.ended_at = ts
        return closed

    def finish(self) -> list[TurnRecord]:
        done = self._close()
        return [done] if done is not None else []

    def open_key(self) -> tuple[str | None, int] | None:
        """(session id, index) of the open turn, without copying it; None when no turn is open."""
        return None if self._turn is None else (self._turn.session_id, self._turn.index)

    def current(self) -> TurnRecord | None:
        """The open turn with its figures so far (a copy), for a live view."""
        if self._turn is None:
            return None
        snapshot = TurnRecord(**{**self._turn.__dict__, "paths_read": list(self._turn.paths_read),
                                  "paths_changed": list(self._turn.paths_changed), "models": list(self._turn.models)})
        self._settle(snapshot)
        return snapshot

    # -- internals ------------------------------------------------------------
    def _open(self, entry: dict, text: str) -> None:
        sid = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else self.session_id
        ts = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        self._turn = TurnRecord(
            session_id=sid, index=self._next_index,
            prompt_uuid=entry.get("uuid") if isinstance(entry.get("uuid"), str) else None,
            started_at=ts, ended_at=ts,
            prompt=text[:PROMPT_CHARS] if self.store_prompts else None,
            preview=make_preview(text) if self.store_prompts else None,
            reply=None,
        )
        self._next_index += 1
        self._calls, self._geos = {}, {}
        self._pending = {}
        self._recorded = set()  # (changed, path) already in the open turn's lists

    def _close(self) -> TurnRecord | None:
        turn, self._turn = self._turn, None
        if turn is None:
            return None
        self._settle(turn)
        return turn

    def _settle(self, turn: TurnRecord) -> None:
        turn.calls = len(self._calls)
        turn.input_tokens = sum(u["input_tokens"] for _, u in self._calls.values())
        turn.output_tokens = sum(u["output_tokens"] for _, u in self._calls.values())
        turn.cache_read_tokens = sum(u["cache_read_input_tokens"] for _, u in self._calls.values())
        turn.cache_creation_tokens = sum(u["cache_creation_input_tokens"] for _, u in self._calls.values())
        turn.models = sorted({m for m, _ in self._calls.values()})
        cost: float | None = 0.0
        if self.cost_of is None and self._calls:
            cost = None
        for key, (model, usage) in self._calls.items():
            if cost is None:
                break
            geo = self._geos.get(key)
            if self.cost_of is None:
                one = None
            else:  # a geography that changes the price is handed on; the standard ones are left out
                one = self.cost_of(model, dict(usage), geo) if geo is not None else self.cost_of(model, dict(usage))
            cost = None if one is None else cost + one
        turn.cost_usd = cost

    def _assistant(self, entry: dict, turn: TurnRecord) -> None:
        msg = entry.get("message")
        if not isinstance(msg, dict):
            return
        model = msg["model"] if isinstance(msg.get("model"), str) else "unknown"
        usage = msg.get("usage")
        if model != "<synthetic>" and isinstance(usage, dict):
            key = msg.get("id") or entry.get("requestId") or entry.get("uuid")
            if isinstance(key, str):
                figures = {f: _int(usage.get(f)) for f in USAGE_FIELDS}
                split = usage.get("cache_creation")
                if isinstance(split, dict):
                    figures["cache_creation_1h_input_tokens"] = _int(split.get("ephemeral_1h_input_tokens"))
                old = self._calls.get(key)
                if old is not None:
                    figures = {f: max(old[1][f], figures[f]) for f in USAGE_FIELDS}
                self._calls[key] = (call_label(model, usage.get("speed")), figures)
                self._geos[key] = modifier_value("inference_geo", usage.get("inference_geo"))
        content = msg.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str) and self.store_prompts:
                if block["text"].strip():
                    turn.reply = block["text"][:REPLY_CHARS]
            elif block.get("type") == "tool_use":
                self._tool_use(block, turn)

    def _tool_use(self, block: dict, turn: TurnRecord) -> None:
        name = block.get("name")
        if name not in READ_TOOLS and name not in CHANGE_TOOLS:
            return
        args = block.get("input")
        if not isinstance(args, dict):
            return
        path = args.get("file_path") or args.get("notebook_path") or args.get("path")
        if not isinstance(path, str) or not path:
            return
        use_id = block.get("id")
        if isinstance(use_id, str):
            self._pending[use_id] = (name, path)
        else:
            self._record(turn, name, path)

    def _tool_results(self, entry: dict, turn: TurnRecord) -> None:
        content = _content(entry)
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            found = self._pending.pop(block["tool_use_id"], None) if isinstance(block.get("tool_use_id"), str) else None
            if found is None or block.get("is_error") is True:
                continue  # a failed read or edit touched nothing
            self._record(turn, *found)

    def _record(self, turn: TurnRecord, tool: str, path: str) -> None:
        """The path joins the turn's read or changed list once (a set: a long turn reads thousands)."""
        changed = tool not in READ_TOOLS
        if (changed, path) not in self._recorded:
            self._recorded.add((changed, path))
            (turn.paths_changed if changed else turn.paths_read).append(path)


def build_turns(entries: Iterable[dict], *, store_prompts: bool = True, cost_of: CostFn | None = None,
                session_id: str | None = None) -> list[TurnRecord]:
    """All turns of a sequence of entries (the last one included, even if still open)."""
    builder = TurnBuilder(store_prompts=store_prompts, cost_of=cost_of, session_id=session_id)
    out: list[TurnRecord] = []
    for entry in entries:
        out.extend(builder.feed(entry))
    out.extend(builder.finish())
    return out


def ends_a_turn(entry: dict) -> bool:
    """The model finished answering (a final stop reason, or Claude Code's end-of-turn markers):
    a good moment for a live writer to save the open turn."""
    if not isinstance(entry, dict):
        return False
    if entry.get("type") == "system":
        return entry.get("subtype") in ("turn_duration", "stop_hook_summary")
    if entry.get("type") == "assistant":
        msg = entry.get("message")
        return isinstance(msg, dict) and msg.get("stop_reason") in ("end_turn", "stop_sequence", "max_tokens")
    return False


def price_cost(prices) -> CostFn:
    """cost_of for a service.engine PriceTable: USD of one call's folded usage, None when unpriced."""
    def cost_of(model: str, usage: dict[str, int], geo: Any = None) -> float | None:
        price, _ = prices.lookup(model, geo=geo)
        if price is None:
            return None
        cw = usage.get("cache_creation_input_tokens", 0)
        cw1h = min(cw, usage.get("cache_creation_1h_input_tokens", 0))
        prompt = usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0) + cw
        p = price.for_prompt(prompt)
        return (usage.get("input_tokens", 0) * p.p_in + usage.get("output_tokens", 0) * p.p_out
                + usage.get("cache_read_input_tokens", 0) * p.p_r + (cw - cw1h) * p.p_w5 + cw1h * p.p_w1h)
    return cost_of
