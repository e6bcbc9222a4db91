"""Adversarial runs in the runner: a trial's findings, and the detection policy as stored
with the run (so a resume looks for exactly what the run started looking for)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from ..core import JSON, TrialRecord
from ..core import names as n
from ..core.plan import CompiledTask
from ..core.safety import (
    MAX_TRIAL_FINDINGS,
    FindingTag,
    SafetyPolicy,
    Severity,
    detect,
    distinct_tags,
)


def trial_findings(
    policy: SafetyPolicy, task: CompiledTask, record: TrialRecord, judged: Sequence[FindingTag]
) -> tuple[tuple[FindingTag, ...], list[dict[str, str]]]:
    """The trial's distinct tags (for its events and grade) and every detection with where
    it was found (for the local report only)."""
    detections = detect(policy, record.output, record.tool_calls, task.trajectory, judged)
    tags = distinct_tags(detections)[:MAX_TRIAL_FINDINGS]
    located = [{**d.tag.as_dict(), "where": d.where} for d in detections]
    return tags, located


def scored_members(tags: Sequence[FindingTag]) -> tuple[dict[str, JSON], dict[str, JSON]]:
    """What an adversarial trial's ``eval.scored`` adds: the count, and the tags in its
    ``x-openwop-eval`` member — kinds and severities, never what was found."""
    return (
        {"safetyFindingCount": len(tags)},
        {n.EXT_FINDINGS: [cast(JSON, t.as_dict()) for t in tags]},
    )


def policy_to_json(policy: SafetyPolicy) -> dict[str, Any]:
    return {
        "canaries": list(policy.canaries),
        "scanSecrets": policy.scan_secrets,
        "forbiddenTools": policy.forbidden_tools,
        "judge": policy.judge,
        "severities": dict(policy.severities),
    }


def policy_from_json(doc: Any) -> SafetyPolicy:
    """The stored policy; a run stored without one gets the defaults."""
    if not isinstance(doc, dict):
        return SafetyPolicy()
    severities = doc.get("severities")
    return SafetyPolicy(
        canaries=tuple(str(c) for c in doc.get("canaries", ())),
        scan_secrets=doc.get("scanSecrets", True) is not False,
        forbidden_tools=doc.get("forbiddenTools", True) is not False,
        judge=doc.get("judge", True) is not False,
        severities={
            str(k): cast(Severity, v)
            for k, v in (severities.items() if isinstance(severities, dict) else ())
            if v in n.SEVERITIES
        },
    )
