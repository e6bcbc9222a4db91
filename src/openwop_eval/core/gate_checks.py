"""Semantic checks of a suite's gate policy (``x-openwop-eval.gate``) against its tasks: a
quarantine or a group that names nothing the suite has is a mistake a schema cannot see."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import names as n
from .problems import Problem


def check_gate(doc: dict[str, Any]) -> Iterator[Problem]:
    """The problems of ``doc``'s gate policy: a quarantined task or a group tag that no task
    of the suite has."""
    ext = doc.get(n.EXT)
    gate = ext.get("gate") if isinstance(ext, dict) else None
    if not isinstance(gate, dict):
        return
    tasks = [t for t in doc.get("tasks") or () if isinstance(t, dict)]
    ids = {t.get("taskId") for t in tasks}
    tags = {tag for t in tasks for tag in _tags(t)}
    here = (n.EXT, "gate")
    for i, entry in enumerate(_items(gate.get("quarantine"))):
        task_id = entry.get("taskId")
        if isinstance(task_id, str) and task_id not in ids:
            yield Problem((*here, "quarantine", i, "taskId"), f"no task {task_id!r} in the suite")
    for i, group in enumerate(_items(gate.get("groups"))):
        tag = group.get("tag")
        if isinstance(tag, str) and tag not in tags:
            yield Problem((*here, "groups", i, "tag"), f"no task of the suite is tagged {tag!r}")


def _items(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _tags(task: dict[str, Any]) -> list[str]:
    ext = task.get(n.EXT)
    tags = ext.get("tags") if isinstance(ext, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
