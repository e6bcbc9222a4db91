"""A finished run's summary read from a file: an ``EvalSummary`` (``run --out``), a JSON
report (``run --report``, which names its run) or an event log (``run --events``, whose one
``run.completed`` carries the summary and whose events name the run).

The one reader wherever a run is named by a file instead of a store's run id: a regression
run's ``--baseline`` and either side of ``compare``. The file is untrusted: bounded, strict
UTF-8 JSON, and every defect a :class:`SummaryFileError` naming the file, the line and the
JSON path — a report of a newer ``reportVersion`` than this version reads among them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import OpenwopEvalError
from ..core.problems import Loc
from ..core.versions import REPORT_VERSION, version_problem
from ..log.event_names import ENDINGS, RUN_COMPLETED
from ..log.jsonl import parse_jsonl
from ..log.versions import LogVersionError, check_version
from .documents import LineMap, parse_document, read_bounded


class SummaryFileError(OpenwopEvalError, ValueError):
    """The file holds no readable run summary; the message names the file and where."""


@dataclass(frozen=True)
class SummaryFile:
    document: Any
    """What the file holds for the run: a summary or a report (``.json``), or the summary
    of the log's ``run.completed`` (``.jsonl``). Not validated: its readers do that."""
    run_id: str | None
    """The run the file names (a report or a log); None for a bare summary."""
    source: str
    lines: LineMap = field(default_factory=LineMap)
    within: str = ""
    """Where ``document`` sits in the file, for messages (the log's run.completed)."""

    @property
    def is_report(self) -> bool:
        return isinstance(self.document, dict) and "reportVersion" in self.document

    @property
    def summary(self) -> Any:
        """The summary itself: a report's ``summary`` member, else the document."""
        return self.document.get("summary") if self.is_report else self.document

    def locate(self, loc: Loc, path: str, message: str) -> str:
        """``FILE:LINE $.path: message`` for a defect at ``loc`` of the document."""
        line = self.lines.line_of(loc)
        where = f"{self.source}:{line}" if line is not None else self.source
        return f"{where}{self.within} {path}: {message}"


def read_summary_file(path: str | Path) -> SummaryFile:
    source = str(path)
    text = _text(source)
    if Path(path).suffix.lower() == ".jsonl":
        return _from_log(text, source)
    doc, lines, problems = parse_document(text, ".json")
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1:,} more problems)" if len(problems) > 1 else ""
        where = f"{source}:{first.line}" if first.line is not None else source
        raise SummaryFileError(f"{where} {first.path}: {first.message}{more}")
    read = SummaryFile(doc, None, source, lines)
    if not read.is_report:
        return read
    problem = version_problem("reportVersion", doc["reportVersion"], REPORT_VERSION)
    if problem is not None:
        raise SummaryFileError(read.locate(("reportVersion",), "$.reportVersion", problem))
    run_id = doc.get("runId")
    return SummaryFile(doc, run_id if isinstance(run_id, str) else None, source, lines)


def _text(source: str) -> str:
    data, problem = read_bounded(Path(source))
    if problem is not None:
        raise SummaryFileError(f"{source}: {problem}")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SummaryFileError(f"{source}:{line}: not valid UTF-8") from None


def _from_log(text: str, source: str) -> SummaryFile:
    try:
        docs = parse_jsonl(text.split("\n"), source)  # not splitlines: U+2028 is text
    except ValueError as exc:
        raise SummaryFileError(str(exc)) from None
    completed = [d for d in docs if d.get("type") == RUN_COMPLETED]
    if len(completed) != 1:
        ended = next((d.get("type") for d in docs if d.get("type") in ENDINGS), None)
        state = "has more than one run.completed event" if completed else "did not complete"
        found = f" (it ends with {ended})" if ended and not completed else ""
        raise SummaryFileError(f"{source}: the run {state}{found}; it has no summary")
    event = completed[0]
    try:
        check_version(event, next(i for i, d in enumerate(docs, 1) if d is event))
    except LogVersionError as exc:
        raise SummaryFileError(f"{source}: {exc}") from None
    within = f" (the run.completed event, sequence {event.get('sequence')!r})"
    payload = event.get("payload")
    outputs = payload.get("outputs") if isinstance(payload, dict) else None
    summary = outputs.get("evalSummary") if isinstance(outputs, dict) else None
    if summary is None:
        raise SummaryFileError(f"{source}{within} $.payload.outputs.evalSummary: missing")
    run_id = event.get("runId")
    return SummaryFile(summary, run_id if isinstance(run_id, str) else None, source, within=within)
