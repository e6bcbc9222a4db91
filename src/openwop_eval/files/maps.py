"""The map file: which trial a trace records, and the suite's names of an agent's tools.

One format for ``grade --map`` and ``run --tool-map`` (and the host's ``tool_map``)::

    {"traces": {"<trace id | sample id | record id | file>": {"taskId": "refund", "trial": 0}},
     "tools": {"search_flights": "flights:search"}}

``tools`` renames a tool as the agent or its traces spell it (a framework's function name,
which cannot hold ``:``) to the suite's name: a call of ``search_flights`` is recorded,
answered and graded as ``flights:search``. ``run`` reads only ``tools``; ``traces`` is for
``grade`` (see ``docs/traces.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, StrictInt, StringConstraints, ValidationError

from ..core.closed import Closed
from ..core.problems import Problem
from .documents import read_document

ToolName = Annotated[str, StringConstraints(min_length=1)]
"""A tool's name (the file's size bounds its length: ``docs/limits.md``)."""


class MapEntry(Closed):
    task_id: str = Field(alias="taskId", min_length=1)
    trial: StrictInt | None = Field(None, ge=0)


class MapFile(Closed):
    traces: dict[str, MapEntry] = Field(default_factory=dict)
    tools: dict[ToolName, ToolName] = Field(default_factory=dict)
    """A tool's name as the agent or trace spells it → the suite's name."""


class MapFileError(ValueError):
    """A map file that cannot be used; the message names the file, line and JSON path."""


def read_map(path: str | Path) -> tuple[MapFile, list[Problem]]:
    """The map file (JSON or YAML); its problems located by line and JSON path."""
    doc, lines, problems = read_document(Path(path))
    if problems:
        return MapFile(), problems
    try:
        return MapFile.model_validate(doc), []
    except ValidationError as exc:
        return MapFile(), [
            Problem(tuple(e["loc"]), e["msg"], line=lines.line_of(tuple(e["loc"])))
            for e in exc.errors()
        ]


def tool_renames(path: str | Path) -> dict[str, str]:
    """The ``tools`` of the map file at ``path``, or :class:`MapFileError` with every
    problem, each ``PATH:LINE $.where: message``."""
    found, problems = read_map(path)
    if problems:
        raise MapFileError("\n".join(f"{path}:{_located(p)}" for p in problems))
    return dict(found.tools)


def _located(problem: Problem) -> str:
    line = f"{problem.line} " if problem.line is not None else " "
    return f"{line}{problem.path}: {problem.message}"
