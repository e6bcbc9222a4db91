"""A rubric trial's judging: the judge's verdict per criterion, its findings, and the
diagnostics a report shows of it; a judge that cannot be reached is the infrastructure's
failure, returned for the trial to record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..agents.base import AgentReply
from ..base.errors import InfrastructureError, unreachable
from ..core import JSON, JudgeProtocolError, JudgeRequest, check_verdicts
from ..core.rubric import verdict_findings
from ..core.safety import FindingTag

if TYPE_CHECKING:
    from .trial import TrialSetup


async def judge_trial(
    setup: TrialSetup, reply: AgentReply, diagnostics: dict[str, Any]
) -> tuple[tuple[float, ...] | None, tuple[FindingTag, ...], InfrastructureError | None]:
    """The judge's ``met`` per criterion (None when judging failed), its findings, and why
    it could not be reached (None when it answered, usably or not)."""
    rubric = setup.task.task.expected.rubric or ()
    if setup.judge is None:
        diagnostics["judgeError"] = "no judge was configured for this rubric task"
        return None, (), None
    request = JudgeRequest(
        setup.task.task_id,
        setup.trial,
        setup.task.task.input,
        _judged(reply, diagnostics.get("conversation")),
        tuple(c.criterion for c in rubric),
        report_findings=setup.safety is not None and setup.safety.judge,
    )
    try:
        with_record = getattr(setup.judge, "judge_with_record", None)
        if with_record is not None:
            verdicts, judge_record = await with_record(request)
            diagnostics["judge"] = judge_record.as_dict()
        else:
            verdicts = await setup.judge.judge(request)
        met = check_verdicts(rubric, verdicts)
    except JudgeProtocolError as exc:
        diagnostics["judgeError"] = str(exc)
        return None, (), unreachable(exc)
    diagnostics["verdicts"] = [
        {
            "criterion": c.criterion,
            "met": m,
            "rationale": v.rationale,
            **({"findings": [f.as_dict() for f in v.findings]} if v.findings else {}),
        }
        for c, m, v in zip(rubric, met, verdicts, strict=True)
    ]
    return met, verdict_findings(verdicts), None


def _judged(reply: AgentReply, conversation: list[dict[str, Any]] | None) -> JSON:
    """What the judge assesses: the output, or a conversation's whole transcript (what each
    side said, turn by turn; the last message is the agent's final reply)."""
    if conversation is None:
        return reply.output
    said = [{"role": m["role"], "content": m["content"]} for m in conversation]
    return {"conversation": said}
