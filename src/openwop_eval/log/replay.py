"""Reading a run back from its event log whole: trial records, verdicts and recorded tool
responses (the streaming reading is :mod:`.reader`; this collects it, for logs that fit in
memory: resume, a fixture recording, the run diff)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..core import JSON, TrialRecord
from .event_names import sequence_of
from .reader import LogReader


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
