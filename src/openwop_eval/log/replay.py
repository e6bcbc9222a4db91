"""Reading a run back from its event log whole: trial records, verdicts and recorded tool
responses (the streaming reading is :mod:`.reader`; this collects it, for logs that fit in
memory: resume, a fixture recording, the run diff)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..core import JSON, TrialRecord
from ..core.names import TURN
from .event_names import EXT, INVOCATION_STARTED, MESSAGE, sequence_of
from .reader import LogReader, turn_of


@dataclass(frozen=True)
class Replay:
    records: list[TrialRecord]
    responses: dict[tuple[str, int], list[tuple[str, JSON, JSON]]]
    """Per (task, trial): the calls a fixture served or a live tool answered, with results."""
    problems: list[str]
    started: dict[str, Any] | None = None
    """The ``eval.started`` payload: the run's terms (see :mod:`.terms`)."""


def replay(docs: Iterable[dict[str, Any]], ordered: bool = False) -> Replay:
    """Every trial of a log; ``ordered`` when ``docs`` already come in sequence order (the
    store's), else they are sorted first."""
    reader = LogReader()
    records, responses = [], {}
    for doc in docs if ordered else sorted(docs, key=sequence_of):
        scored = reader.feed(doc)
        if scored is not None:
            key = (scored.record.task_id, scored.record.index)
            records.append(scored.record)
            responses[key] = scored.responses
    return Replay(records, responses, reader.problems.listed(), reader.started)


Said = dict[tuple[str, int], list[dict[str, JSON]]]
"""Per (task, trial): a conversation's messages, each ``{turn, role, content}``."""


def conversations(docs: Iterable[dict[str, Any]], ordered: bool = False) -> Said:
    """The messages of each conversation trial of a log (its ``agent.message`` events), in
    the order they were said: those of the trial's last invocation, so a trial a resumed run
    played again shows the conversation that was graded, not the one cut short."""
    said: dict[str, list[dict[str, JSON]]] = {}
    latest: dict[tuple[str, int], str] = {}
    for doc in docs if ordered else sorted(docs, key=sequence_of):
        payload = doc.get("payload")
        ext = payload.get(EXT) if isinstance(payload, dict) else None
        if not isinstance(ext, dict):
            continue
        task, trial, invocation = ext.get("taskId"), ext.get("trial"), ext.get("invocationId")
        if not isinstance(task, str) or type(trial) is not int or not isinstance(invocation, str):
            continue
        if doc.get("type") == INVOCATION_STARTED:
            latest[(task, trial)] = invocation
        elif doc.get("type") == MESSAGE:
            role = payload.get("role") if isinstance(payload, dict) else None
            content = payload.get("content") if isinstance(payload, dict) else None
            message = {"turn": turn_of(ext.get(TURN)), "role": role, "content": content}
            said.setdefault(invocation, []).append(message)
    return {key: said[invocation] for key, invocation in latest.items() if invocation in said}
