"""Plants a crash in the store of this process: SIGKILL — no cleanup, no flush, like a
power cut — at one event commit.

A fault is ``WHEN:MODE``:

- WHEN: ``N`` (the N-th commit of events, counting from 1), or an event type (the first
  commit that holds an event of that type, e.g. ``eval.completed``);
- MODE: ``before`` (nothing of that commit is written), ``mid`` (inside its transaction,
  after the events that precede its first ``eval.scored`` are inserted: a trial's events
  without its score, and with several trials in one group commit, the first trials whole and
  the next one cut), or ``after`` (committed, but nothing after it ran: no status update, no
  line in the events file, no reply to a client).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def plant(spec: str, armed: Callable[[], bool] = lambda: True) -> None:
    """Plant the fault ``spec``; commits count only while ``armed()`` (so a host can serve
    other runs first)."""
    from openwop_eval.store import sql

    when, _, mode = spec.partition(":")
    original = sql.Store.append
    seen = {"commits": 0}

    def hit(docs: Any) -> bool:
        if when.isdigit():
            return seen["commits"] == int(when)
        return any(d.get("type") == when for d in docs)

    def append(self: Any, run_id: str, docs: Any, trials: Any = ()) -> None:
        live = bool(docs) and armed()
        if live:
            seen["commits"] += 1
        if not live or not hit(docs):
            original(self, run_id, docs, trials)
            return
        if mode == "before":
            _kill()
        if mode == "mid":
            types = [d.get("type") for d in docs]
            cut = types.index("eval.scored") if "eval.scored" in types else len(docs) // 2
            with self.transaction() as tx:
                sql._insert_events(tx, run_id, docs[:cut])
                _kill()
        original(self, run_id, docs, trials)
        _kill()

    sql.Store.append = append  # type: ignore[method-assign]
