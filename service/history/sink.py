"""Writing turn records while the service reads transcripts (fails open).

Plugs into LiveSession's entry sink: `(session, entry) -> None`. Each live
session's entries go through a TurnBuilder (service/history/turns.py, pure); a turn is
written when the next prompt closes it, when the model finishes answering
(`ends_a_turn`), and at most every WRITE_EVERY_S while it runs, so a rebuild
from byte zero costs about one write per turn. Writes are upserts keyed by
(session, segment 0, turn index): replaying a file rewrites the same rows. The
stored preview is the prompt followed by the model's last answer of the turn.

The turns saved while a piece of a transcript is read are written together by
`flush`, in one transaction (the reader calls it after each piece): a startup
read of thousands of turns paid a transaction and a commit for each.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from service.history.turns import TurnBuilder, TurnRecord, ends_a_turn, price_cost

log = logging.getLogger("ctxlamp.turns")

WRITE_EVERY_S = 2.0
PROMPT_SHARE = 320   # characters of the prompt in the stored preview; the model's last answer fills the rest
STORED_MAX = 500     # what the store keeps (its PROMPT_PREVIEW_MAX)
MAX_UNSAVED = 512    # turns held for the next flush at most (a reader that never flushes still writes)


def searchable_text(turn: TurnRecord) -> str | None:
    """The prompt, then the model's last answer of the turn: the words a later session may
    remember are in either."""
    if turn.prompt is None:
        return None
    prompt = " ".join(turn.prompt.split())
    reply = " ".join((turn.reply or "").split())
    if not reply:
        return prompt[:STORED_MAX]
    if len(prompt) > PROMPT_SHARE:
        prompt = prompt[: PROMPT_SHARE - 1] + "…"
    return (prompt + " — answer: " + reply)[:STORED_MAX]


class TurnSink:
    def __init__(self, write: Callable[[list[dict[str, Any]]], Any], *, store_prompts: bool = True, prices=None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`write` is Store.add_turn_records: the turns of one flush, one transaction."""
        self.write = write
        self._unsaved: dict[tuple[Any, int], TurnRecord | TurnBuilder] = {}  # turns to write at the next flush
        self.store_prompts = store_prompts
        self.cost_of = price_cost(prices) if prices is not None else None
        self.clock = clock
        self._builders: dict[str, tuple[int, TurnBuilder]] = {}   # transcript -> (engine id, builder)
        self._written_at: dict[tuple[Any, int], float] = {}

    def configure(self, *, store_prompts: bool) -> None:
        self.store_prompts = store_prompts
        for _, builder in self._builders.values():
            builder.store_prompts = store_prompts

    def __call__(self, session: Any, entry: dict) -> None:
        try:
            self._feed(session, entry)
        except Exception:  # turn records fail open: measurement never stops for them
            log.exception("turn record skipped")

    def _builder(self, session: Any) -> TurnBuilder:
        key = str(getattr(session, "path", session))
        engine_id = id(getattr(session, "engine", None))
        known = self._builders.get(key)
        if known is None or known[0] != engine_id:  # new session, or the file started over
            builder = TurnBuilder(store_prompts=self.store_prompts, cost_of=self.cost_of,
                                  session_id=getattr(session, "session_id", None))
            self._builders[key] = (engine_id, builder)
            return builder
        return known[1]

    def _feed(self, session: Any, entry: dict) -> None:
        builder = self._builder(session)
        for turn in builder.feed(entry):
            self._save(turn)
            self._written_at.pop((turn.session_id, turn.index), None)
        key = builder.open_key()
        if key is None or not key[0]:
            return
        last = self._written_at.get(key)
        if ends_a_turn(entry) or last is None or self.clock() - last >= WRITE_EVERY_S:
            self._keep(key, builder)  # the open turn is copied once, when flushed: not after every entry

    def finish(self, session: Any) -> None:
        """The session stops being followed: write its open turn and forget it."""
        known = self._builders.pop(str(getattr(session, "path", session)), None)
        if known is not None:
            for turn in known[1].finish():
                self._save(turn)
        self.flush()

    def flush(self) -> None:
        """Write the turns saved since the last flush, in one transaction (fails open)."""
        if not self._unsaved:
            return
        saved, self._unsaved = self._unsaved, {}
        try:
            turns = [item if isinstance(item, TurnRecord) else item.current() for item in saved.values()]
            self.write([self._row(t) for key, t in zip(saved, turns) if t is not None and (t.session_id, t.index) == key])
        except Exception:
            log.exception("%d turn records skipped", len(saved))

    def _save(self, turn: TurnRecord) -> None:
        if turn.session_id:
            self._keep((turn.session_id, turn.index), turn)

    def _keep(self, key: tuple[Any, int], item: TurnRecord | TurnBuilder) -> None:
        """Mark a turn to be written at the next flush: a closed one, or a builder's open one."""
        self._written_at[key] = self.clock()
        self._unsaved[key] = item
        if len(self._unsaved) >= MAX_UNSAVED:
            self.flush()

    def _row(self, turn: TurnRecord) -> dict[str, Any]:
        tokens = turn.input_tokens + turn.output_tokens + turn.cache_read_tokens + turn.cache_creation_tokens
        return {"session_id": turn.session_id, "segment": 0, "turn": turn.index, "at": turn.started_at,
                "prompt_preview": searchable_text(turn) if self.store_prompts else None,
                "paths_read": turn.paths_read, "paths_changed": turn.paths_changed,
                "tokens": tokens, "cost_usd": turn.cost_usd or 0.0}
