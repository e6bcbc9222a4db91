"""The traces of one session as one conversation.

An agent that serves a conversation often writes one trace per user message, each naming
the conversation (``gen_ai.conversation.id``, ``session.id``). Traces of one session that
record the same trial are its parts: joined in start order, their turns follow one another
and their calls keep their order. A trace of a session that names no trial takes the one
trial its session's other traces name (when they name exactly one). Traces of one session
that name different trials stay apart, as traces of no session do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..core.stats import decimal_sum
from .records import Trace, TraceTurn


def inherit_trials(traces: Sequence[Trace]) -> list[Trace]:
    """``traces``, where a session's trace without a task takes its session's one trial."""
    named: dict[str, set[tuple[str, int]]] = {}
    for trace in traces:
        if trace.session is not None and trace.task_id is not None:
            named.setdefault(trace.session, set()).add((trace.task_id, trace.trial or 0))
    found: list[Trace] = []
    for trace in traces:
        trials = named.get(trace.session or "", set())
        if trace.session is not None and trace.task_id is None and len(trials) == 1:
            ((task_id, trial),) = trials
            trace = replace(trace, task_id=task_id, trial=trial)
        found.append(trace)
    return found


def same_session(held: Trace, trace: Trace) -> bool:
    return held.session is not None and held.session == trace.session


def joined(parts: Sequence[Trace]) -> Trace:
    """The parts of one session's trial as one trace: turns and calls in start order, the
    last part's answer, the parts' costs and latencies summed (unknown if one is), the first
    error."""
    if len(parts) == 1:
        return parts[0]
    ordered = sorted(parts, key=lambda t: (t.start, t.source))
    turns: list[TraceTurn] = []
    calls = []
    for part in ordered:
        offset = len(turns)
        calls += [replace(c, turn=c.turn + offset) for c in part.calls]
        turns += part.turns or (TraceTurn(None, part.output),)
    first, last = ordered[0], ordered[-1]
    return replace(
        first,
        keys=tuple(dict.fromkeys(k for t in ordered for k in t.keys)),
        calls=tuple(calls),
        output=last.output,
        cost_usd=_sum([t.cost_usd for t in ordered]),
        latency_ms=_sum([t.latency_ms for t in ordered]),
        error=next((t.error for t in ordered if t.error is not None), None),
        turns=tuple(turns),
    )


def _sum(values: Sequence[float | None]) -> float | None:
    """The exact sum of the decimals (0.1 + 0.2 is 0.3); unknown when one is."""
    known = [v for v in values if v is not None]
    return float(decimal_sum(known)) if len(known) == len(values) else None
