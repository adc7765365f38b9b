"""The live branch of a conversation: which entries are in the context, and what each put into B.

Claude Code never deletes from a transcript. A rewind (double-Esc, /rewind, a resume at an
earlier message) is written as a new entry whose `parentUuid` is an older entry, so the file
holds branches the model no longer sees. This module keeps the tree of the open segment's
entries and, on each entry, the per-path contribution changes it made (path, before, after).
When the conversation continues from an ancestor, the changes of the entries left behind are
undone in reverse order, and those of a branch re-entered are redone: contributions leave B
and come back whole, never recomputed (token at ingestion holds).

Not every fork is a rewind: the results of parallel tool calls each hang off their own
`tool_use` block, and command echoes are left aside by the next prompt. A fork is a rewind
only when it leaves behind a human prompt or a model response other than the one it
continues from. Otherwise the entry is read as a continuation of the latest one, so the tree
stays one chain in ingestion order. Entries with no uuid, or whose parent is unknown (older
versions, lines no reader parses, an entry before the last compaction), continue the latest
entry: they never trigger a rewind; nor do `progress` entries, written for running tools while
the conversation goes on.

Memory: one dict entry per uuid plus three integers per entry, and the changes themselves
(one tuple per tool event); all of it is dropped at each reset.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from service.engine.pickling import by_fields

PROMPT = -1  # mark of a human prompt; a model response's mark is its ordinal (1, 2, ...); 0 for the rest


@dataclass(frozen=True)
class Fork:
    """A rewind found but not yet followed: the entry, its parent, and the nodes between."""
    uuid: str
    parent: int
    mark: int
    left: list[int]  # from the latest entry up to the common ancestor: leave the context
    taken: list[int]  # from the parent up to the common ancestor: come back

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)  # a worker rebuilds it (service/engine/pickling.py)


class LiveBranch:
    __slots__ = ("_node", "_parent", "_depth", "_mark", "_responses", "_changes", "tip")

    def __init__(self) -> None:
        self.restart(None)

    def restart(self, root: str | None, aliases: tuple[str, ...] | list[str] = ()) -> None:
        """Forget everything (a reset). `root` (the boundary's uuid) and `aliases` (the messages a
        compaction kept verbatim) become the one root entry: continuing from any of them later
        leaves behind all that followed the compaction."""
        self._node: dict[str, int] = {}
        self._parent = array("l")
        self._depth = array("l")
        self._mark = array("l")
        self._responses: dict[str, int] = {}
        self._changes: dict[int, list[tuple[str, int | None, int]]] = {}
        self.tip = -1
        if root is not None:
            self._append(-1, 0)
            for uuid in (root, *aliases):
                if isinstance(uuid, str):
                    self._node[uuid] = 0

    def _append(self, parent: int, mark: int) -> int:
        node = len(self._parent)
        self._parent.append(parent)
        self._depth.append(self._depth[parent] + 1 if parent >= 0 else 0)
        self._mark.append(mark)
        self.tip = node
        return node

    def response_mark(self, message_id: str) -> int:
        """The ordinal of a model response (entries of one response share its message id)."""
        mark = self._responses.get(message_id)
        if mark is None:
            mark = self._responses[message_id] = len(self._responses) + 1
        return mark

    def enter(self, uuid: object, parent_uuid: object, mark: int, can_fork: bool = True) -> Fork | None:
        """Place one entry in the tree, or return the Fork it makes (placed once `take` is called).
        An entry that cannot fork continues the latest entry whatever its parent."""
        if not isinstance(uuid, str) or uuid in self._node:
            return None  # no topology, or a copy of an entry already placed: the latest entry stays the tip
        parent = self._node.get(parent_uuid) if isinstance(parent_uuid, str) else None
        tip = self.tip
        if parent is None or parent == tip or tip < 0 or not can_fork:
            self._node[uuid] = self._append(tip, mark)
            return None
        left, taken = self._paths_to_fork(tip, parent)
        keep = self._mark[parent]
        if not any(self._mark[n] == PROMPT or (self._mark[n] > 0 and self._mark[n] != keep) for n in left):
            self._node[uuid] = self._append(tip, mark)  # a parallel tool result or the like: one chain
            return None
        return Fork(uuid, parent, mark, left, taken)

    def take(self, fork: Fork, contrib: dict[str, int]) -> None:
        """Follow the fork: undo the changes left behind, redo those taken up again, place the entry."""
        changes = self._changes
        for node in fork.left:  # newest first
            for path, before, _after in reversed(changes.get(node, ())):
                if before is None:
                    contrib.pop(path, None)
                else:
                    contrib[path] = before
        for node in reversed(fork.taken):  # oldest first
            for path, _before, after in changes.get(node, ()):
                contrib[path] = after
        self._node[fork.uuid] = self._append(fork.parent, fork.mark)

    def _paths_to_fork(self, a: int, b: int) -> tuple[list[int], list[int]]:
        """Nodes from `a` up to the common ancestor (excluded), and from `b` up to it (`b` included)."""
        left, taken = [], []
        depth, parent = self._depth, self._parent
        while depth[a] > depth[b]:
            left.append(a)
            a = parent[a]
        while depth[b] > depth[a]:
            taken.append(b)
            b = parent[b]
        while a != b:
            left.append(a)
            taken.append(b)
            a, b = parent[a], parent[b]
        return left, taken

    def record(self, path: str, before: int | None, after: int) -> None:
        """A contribution change made by the latest entry (before None: the path was not in B)."""
        if self.tip < 0:
            self._append(-1, 0)  # changes before any entry with a uuid hang on a root of their own
        self._changes.setdefault(self.tip, []).append((path, before, after))
