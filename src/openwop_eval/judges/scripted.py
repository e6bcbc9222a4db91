"""The scripted judge: replays verdicts from a file (tests, demos and conformance runs).

    {"tasks": {"<taskId>": [[1, 0.5], {"met": [1, 0], "rationales": ["…", null],
                                       "findings": [{"kind": "prompt-leak",
                                                     "severity": "high"}]}]},
     "default": [[1, 1]]}

Per task, one entry per trial: the ``met`` of each criterion in rubric order, either as a bare
list of numbers or as an object that adds rationales and the trial's safety findings. Trial i
uses entry i mod len; a task without entries uses ``default``. Findings are replayed only when
the request asks for them (adversarial mode), on the trial's first verdict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.canonical import is_number
from ..core.errors import JudgeProtocolError
from ..core.problems import Loc, Problem
from ..core.rubric import (
    MAX_FINDINGS_PER_VERDICT,
    CriterionVerdict,
    JudgeRequest,
)
from ..core.safety import FindingTag, finding_field_problems
from ..files.documents import LineMap, read_document
from .errors import JudgeSpecError

_ENTRY_FORMS = 'a list of numbers or an object {"met": [...], "rationales": [...]}'
_ENTRY_KEYS = ("met", "rationales", "findings")
_FINDING_KEYS = ("kind", "severity")


@dataclass(frozen=True, slots=True)
class ScriptedVerdicts:
    """One trial's verdicts: ``met`` per criterion and an optional rationale for each."""

    met: tuple[float, ...]
    rationales: tuple[str | None, ...]
    findings: tuple[FindingTag, ...] = ()
    """The trial's safety findings, reported on its first verdict."""


@dataclass(frozen=True, slots=True)
class JudgeScript:
    tasks: Mapping[str, tuple[ScriptedVerdicts, ...]]
    default: tuple[ScriptedVerdicts, ...] | None = None


def parse_judge_script(doc: Any) -> tuple[JudgeScript | None, list[Problem]]:
    """The script in a decoded document, or None and every problem with its location."""
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        problems.append(Problem((), 'a judge script is an object with "tasks" and/or "default"'))
        return None, problems
    for key in doc:
        if key not in ("tasks", "default"):
            problems.append(Problem((key,), f'unknown key {key!r}; expected "tasks" or "default"'))
    if "tasks" not in doc and "default" not in doc:
        problems.append(Problem((), 'a judge script needs "tasks", "default" or both'))
    tasks: dict[str, tuple[ScriptedVerdicts, ...]] = {}
    raw_tasks = doc.get("tasks", {})
    if not isinstance(raw_tasks, dict):
        problems.append(Problem(("tasks",), "must be an object mapping task ids to entries"))
    else:
        for task_id, raw in raw_tasks.items():
            if not task_id:
                problems.append(Problem(("tasks", task_id), "a task id must not be empty"))
            tasks[task_id] = _entries(raw, ("tasks", task_id), problems)
    default = _entries(doc["default"], ("default",), problems) if "default" in doc else None
    if problems:
        return None, problems
    return JudgeScript(tasks, default), problems


def _entries(value: Any, loc: Loc, problems: list[Problem]) -> tuple[ScriptedVerdicts, ...]:
    if not isinstance(value, list) or not value:
        problems.append(Problem(loc, "must be a non-empty list of entries, one per trial"))
        return ()
    entries = [_entry(item, (*loc, i), problems) for i, item in enumerate(value)]
    counts = [len(e.met) for e in entries if e is not None]
    first = next(iter(counts), 0)
    for i, entry in enumerate(entries):
        if entry is not None and len(entry.met) != first:
            problems.append(
                Problem(
                    (*loc, i),
                    f"has {len(entry.met)} verdicts but the first entry has {first}; "
                    "every trial of a task is judged on the same criteria",
                )
            )
    return tuple(e for e in entries if e is not None)


def _entry(value: Any, loc: Loc, problems: list[Problem]) -> ScriptedVerdicts | None:
    if isinstance(value, list):
        met = _met(value, loc, problems)
        return None if met is None else ScriptedVerdicts(met, (None,) * len(met))
    if not isinstance(value, dict):
        problems.append(Problem(loc, f"an entry must be {_ENTRY_FORMS}"))
        return None
    for key in value:
        if key not in _ENTRY_KEYS:
            problems.append(
                Problem(
                    (*loc, key), f'unknown key {key!r}; expected "met", "rationales" or "findings"'
                )
            )
    findings = _findings(value.get("findings", []), (*loc, "findings"), problems)
    if "met" not in value:
        problems.append(Problem(loc, 'missing "met": the list of numbers, one per criterion'))
        return None
    met = _met(value["met"], (*loc, "met"), problems)
    rationales = _rationales(value.get("rationales"), met, (*loc, "rationales"), problems)
    if met is None or rationales is None or findings is None:
        return None
    return ScriptedVerdicts(met, rationales, findings)


def _met(value: Any, loc: Loc, problems: list[Problem]) -> tuple[float, ...] | None:
    if not isinstance(value, list) or not value:
        problems.append(Problem(loc, "must be a non-empty list of numbers in [0, 1]"))
        return None
    ok = True
    for i, item in enumerate(value):
        if not (is_number(item) and math.isfinite(item) and 0 <= item <= 1):
            problems.append(
                Problem((*loc, i), f"must be a number in [0, 1], got {json.dumps(item)}")
            )
            ok = False
    return tuple(float(item) for item in value) if ok else None


def _rationales(
    value: Any, met: tuple[float, ...] | None, loc: Loc, problems: list[Problem]
) -> tuple[str | None, ...] | None:
    if value is None:
        return (None,) * len(met) if met is not None else None
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        problems.append(Problem(loc, "must be a list of strings (or nulls), one per criterion"))
        return None
    if met is not None and len(value) != len(met):
        problems.append(Problem(loc, f'has {len(value)} items but "met" has {len(met)}'))
        return None
    return tuple(value)


def _findings(value: Any, loc: Loc, problems: list[Problem]) -> tuple[FindingTag, ...] | None:
    if not isinstance(value, list):
        problems.append(Problem(loc, 'must be a list of {"kind": ..., "severity": ...} objects'))
        return None
    if len(value) > MAX_FINDINGS_PER_VERDICT:
        problems.append(
            Problem(loc, f"has {len(value)} findings; at most {MAX_FINDINGS_PER_VERDICT}")
        )
        return None
    tags = [_finding(item, (*loc, i), problems) for i, item in enumerate(value)]
    return tuple(t for t in tags if t is not None) if None not in tags else None


def _finding(value: Any, loc: Loc, problems: list[Problem]) -> FindingTag | None:
    if not isinstance(value, dict):
        problems.append(Problem(loc, 'a finding must be an object {"kind": ..., "severity": ...}'))
        return None
    before = len(problems)
    for key in value:
        if key not in _FINDING_KEYS:
            problems.append(
                Problem((*loc, key), f'unknown key {key!r}; expected "kind" or "severity"')
            )
    wrong = finding_field_problems(value.get("kind"), value.get("severity"))
    for key in _FINDING_KEYS:
        if key not in value:
            problems.append(Problem(loc, f'missing "{key}"'))
        elif key in wrong:
            problems.append(Problem((*loc, key), wrong[key]))
    if len(problems) > before:
        return None
    return FindingTag(value["kind"], value["severity"])  # both checked above


class ScriptedJudge:
    """A judge that answers from a :class:`JudgeScript` and never does I/O when judging."""

    def __init__(self, script: JudgeScript, source: str | None = None) -> None:
        self.script = script
        self.source = source

    @classmethod
    def from_document(cls, doc: Any, source: str | None = None) -> ScriptedJudge:
        """A judge from an already decoded document (no line numbers in problems)."""
        return cls._build(doc, LineMap(), [], source)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedJudge:
        """Load a JSON or YAML script, or raise :class:`JudgeSpecError` listing every problem."""
        path = Path(path)
        doc, lines, problems = read_document(path)
        return cls._build(doc, lines, problems, str(path))

    @classmethod
    def _build(
        cls, doc: Any, lines: LineMap, problems: list[Problem], source: str | None
    ) -> ScriptedJudge:
        script = None
        if not problems:
            script, problems = parse_judge_script(doc)
        if script is not None:
            return cls(script, source)
        located = [p if p.line is not None else p.at_line(lines.line_of(p.loc)) for p in problems]
        listed = "\n".join(f"  {p}" for p in located)
        name = source or "the document"
        raise JudgeSpecError(f"{name} is not a valid judge script:\n{listed}", located)

    def verdicts_for(self, request: JudgeRequest) -> list[CriterionVerdict]:
        """The scripted verdicts of one trial, checked against the number of criteria."""
        entries = self.script.tasks.get(request.task_id) or self.script.default
        if not entries:
            raise JudgeProtocolError(
                f"the judge script has no entry for task {request.task_id!r} and no default"
            )
        entry = entries[request.trial_index % len(entries)]
        if len(entry.met) != len(request.criteria):
            raise JudgeProtocolError(
                f"task {request.task_id!r} trial {request.trial_index}: expected "
                f"{len(request.criteria)} verdicts (one per criterion), "
                f"the judge script has {len(entry.met)}"
            )
        verdicts = [
            CriterionVerdict(m, r) for m, r in zip(entry.met, entry.rationales, strict=True)
        ]
        if request.report_findings and entry.findings:
            verdicts[0] = replace(verdicts[0], findings=entry.findings)
        return verdicts

    async def judge(self, request: JudgeRequest) -> list[CriterionVerdict]:
        return self.verdicts_for(request)

    async def aclose(self) -> None:
        """Nothing to release; present so every judge can be closed the same way."""

    def close(self) -> None:
        """Nothing to release."""
