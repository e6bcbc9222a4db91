"""Plants a crash in the store of this process: SIGKILL — no cleanup, no flush, like a
power cut — at one event commit.

A fault is ``WHEN:MODE``:

- WHEN: ``N`` (the commit that holds the N-th trial's ``eval.scored``, counting from 1,
  whichever trials the runner grouped with it), or an event type (the first commit that
  holds an event of that type, e.g. ``eval.completed``);
- MODE: ``before`` (nothing of that commit is written), ``mid`` (inside its transaction,
  after the events that precede the N-th trial's ``eval.scored`` — or the first one — are
  inserted: that trial's events without its score, and any trials before it in the same
  group commit whole), or ``after`` (committed, but nothing after it ran: no status update,
  no line in the events file, no reply to a client).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def _type(doc: Any) -> Any:
    """An event's type, committed as a row (the runner's) or as a document."""
    from openwop_eval.store import EventRow

    return doc.type if isinstance(doc, EventRow) else doc.get("type")


def in_run_worker() -> bool:
    """This process is a host's run worker (openwop_eval.server.run_worker)."""
    worker = sys.modules.get("openwop_eval.server.run_worker")
    return bool(getattr(worker, "RUNNING", False))


def in_commit_process() -> bool:
    """This process is a run's commit process (openwop_eval.runner.commit_process)."""
    forked = sys.modules.get("openwop_eval.runner.commit_process")
    return bool(getattr(forked, "CHILD", False))


def plant(
    spec: str,
    armed: Callable[[], bool] = lambda: True,
    disarm: Callable[[], object] = lambda: None,
    victim: str = "host",
) -> None:
    """Plant the fault ``spec``; commits count only while ``armed()`` (so a host can serve
    other runs first), and ``disarm()`` is called as it strikes (a worker started after it
    does not strike again). In a host's run worker, or a run's commit process, it kills
    the parent first — the child dies with it — unless ``victim`` is ``worker``: then the
    child alone."""
    from openwop_eval.store import bulk, sql

    when, _, mode = spec.partition(":")
    original = sql.Store.append
    seen = {"scored": 0}

    def _kill() -> None:
        disarm()
        if victim == "host" and (in_run_worker() or in_commit_process()):
            os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    def cut_at(docs: Any) -> int | None:
        """Where the fault lies in this commit (an index into it), or None."""
        types = [_type(d) for d in docs]
        if not when.isdigit():
            if when not in types:
                return None
            return types.index("eval.scored") if "eval.scored" in types else len(docs) // 2
        scored = [i for i, kind in enumerate(types) if kind == "eval.scored"]
        before, seen["scored"] = seen["scored"], seen["scored"] + len(scored)
        nth = int(when) - before  # the trial's place among this commit's, from 1
        return scored[nth - 1] if 1 <= nth <= len(scored) else None

    def append(self: Any, run_id: str, docs: Any, trials: Any = (), within: Any = None) -> None:
        cut = cut_at(docs) if docs and armed() else None
        if cut is None:
            original(self, run_id, docs, trials, within)
            return
        if mode == "before":
            _kill()
        if mode == "mid":
            with self.transaction() as tx:
                bulk.insert_events(tx, run_id, docs[:cut])
                _kill()
        original(self, run_id, docs, trials, within)
        _kill()

    sql.Store.append = append  # type: ignore[method-assign]
