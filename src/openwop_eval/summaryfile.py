"""A finished run's summary read from a file: an ``EvalSummary`` (``run --out``), a JSON
report (``run --report``, which names its run) or an event log (``run --events``, whose
``run.completed`` carries the summary and whose events name the run).

Used wherever a run is named by a file instead of a store's run id: a regression run's
``--baseline`` and either side of ``compare``. The file is untrusted: bounded, strict JSON,
and every defect a :class:`SummaryFileError` naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core import OpenwopEvalError
from .documents import read_bounded
from .log.jsonl import parse_jsonl
from .log.names import RUN_COMPLETED, sequence_of


class SummaryFileError(OpenwopEvalError, ValueError):
    """The file holds no readable run summary; the message names the file and why."""


@dataclass(frozen=True)
class SummaryFile:
    summary: dict[str, Any]
    run_id: str | None
    """The run the file names (a report or a log); None for a bare summary."""
    source: str


def read_summary_file(path: str | Path) -> SummaryFile:
    source = str(path)
    data, problem = read_bounded(Path(path))
    if problem is not None:
        raise SummaryFileError(f"{source}: {problem}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SummaryFileError(f"{source}: not UTF-8 text") from None
    if Path(path).suffix.lower() == ".jsonl":
        return _from_log(text, source)
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise SummaryFileError(f"{source}: nested too deeply") from None
    except ValueError as exc:
        raise SummaryFileError(f"{source}: not JSON ({exc})") from None
    if isinstance(doc, dict) and "reportVersion" in doc:  # a report: its summary and run
        run_id = doc.get("runId")
        return SummaryFile(
            _summary(doc.get("summary"), source),
            run_id if isinstance(run_id, str) else None,
            source,
        )
    return SummaryFile(_summary(doc, source), None, source)


def _from_log(text: str, source: str) -> SummaryFile:
    try:
        docs = parse_jsonl(text.splitlines(), source)
    except ValueError as exc:
        raise SummaryFileError(str(exc)) from None
    ends = [d for d in docs if d.get("type") == RUN_COMPLETED]
    if not ends:
        raise SummaryFileError(f"{source}: the log has no run.completed; the run did not finish")
    last = max(ends, key=sequence_of)
    payload = last.get("payload")
    outputs = payload.get("outputs") if isinstance(payload, dict) else None
    summary = outputs.get("evalSummary") if isinstance(outputs, dict) else None
    run_id = last.get("runId")
    return SummaryFile(
        _summary(summary, source), run_id if isinstance(run_id, str) else None, source
    )


def _summary(value: Any, source: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not {"suiteId", "aggregateScore"} <= value.keys():
        raise SummaryFileError(f"{source}: not an EvalSummary (no suiteId and aggregateScore)")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
