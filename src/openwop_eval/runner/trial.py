"""One trial: the agent runs behind the tool boundary and is judged if the task is a rubric
(:func:`run_trial`, on the event loop); then it is graded by the core and gets its closing
events (:func:`finish_trial`, CPU work, done by the run's committer thread)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..agents.base import Agent, AgentProtocolError, AgentReply, ToolMissError, TrialContext
from ..agents.python import AgentStalledError
from ..base.limits import MAX_OUTPUT_CHARS
from ..core import (
    CompiledTask,
    GradingPlan,
    TrialGrade,
    TrialRecord,
    grade_trial,
)
from ..core.names import CONVERSATION, ENDED_AT_MAX_TURNS, ENDED_BY_USER
from ..core.names import ERROR_INFRASTRUCTURE as INFRA
from ..core.names import ERROR_USER_SIMULATOR as USER_SIMULATOR
from ..core.rubric import Judge
from ..core.safety import FindingTag, SafetyPolicy
from ..log.event_names import (
    DECIDED,
    EVAL_SCORED,
    EXT,
    INVOCATION_COMPLETED,
    INVOCATION_STARTED,
    TOOL_LISTING,
)
from ..runtime.clock import utc_stamp
from ..users import UserPlayers, UserSimulatorError
from .conversation import Played, converse
from .events import Pending, pending, serial_id
from .failures import Failure, failure, stderr_of
from .findings import scored_members, trial_findings
from .judging import judge_trial
from .replies import check_reply
from .tools import (
    ContentTooLargeError,
    FixtureBook,
    LiveTool,
    RecordedCall,
    RecordedMessage,
    ToolBoundary,
    cut,
)


@dataclass(frozen=True)
class TrialSetup:
    """What runs one trial (anywhere: an executor may send it to another process); the
    plan that grades it stays with the run."""

    task: CompiledTask
    trial: int
    agent: Agent
    judge: Judge | None = None
    fixtures: FixtureBook | None = None
    live: Mapping[str, LiveTool] | None = None
    timeout_s: float | None = None
    safety: SafetyPolicy | None = None
    """Set in adversarial runs: what the detectors look for."""
    users: UserPlayers | None = None
    """Who plays the user of a conversation task (None: from the environment)."""


@dataclass
class GradedTrial:
    """A played trial graded under the run's plan, with the events that record it."""

    record: TrialRecord
    grade: TrialGrade
    invocation_id: str
    events: list[Pending]
    diagnostics: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlayedTrial:
    """A trial the agent is done with, not yet graded."""

    setup: TrialSetup
    boundary: ToolBoundary
    invoked: AgentAnswer
    record: TrialRecord
    started: Pending
    diagnostics: dict[str, Any]
    ended_at: str

    @property
    def key(self) -> tuple[str, int]:
        return self.record.task_id, self.record.index


@dataclass(frozen=True)
class PortableTrial:
    """A trial the agent is done with, as data without its setup: what a Ray worker sends
    back, rebuilt around the driver's own setup (:meth:`rebuild`)."""

    calls: list[RecordedCall]
    ext: dict[str, Any]
    messages: list[RecordedMessage]
    invocation_id: str
    invoked: AgentAnswer
    record: TrialRecord
    started: Pending
    diagnostics: dict[str, Any]
    ended_at: str

    @classmethod
    def of(cls, done: PlayedTrial) -> PortableTrial:
        boundary = done.boundary
        return cls(
            boundary.calls,
            boundary.ext,
            boundary.messages,
            boundary.invocation_id,
            done.invoked,
            done.record,
            done.started,
            done.diagnostics,
            done.ended_at,
        )

    def rebuild(self, setup: TrialSetup) -> PlayedTrial:
        """The :class:`PlayedTrial` of this trial around ``setup`` (its task, trial, agent)."""
        boundary = ToolBoundary(
            agent_id=setup.agent.agent_id,
            task_id=setup.task.task_id,
            trial=setup.trial,
            invocation_id=self.invocation_id,
            fixtures=None,
            live=None,
        )
        boundary.calls, boundary.ext, boundary.messages = self.calls, self.ext, self.messages
        boundary.closed = True
        return PlayedTrial(
            setup,
            boundary,
            self.invoked,
            self.record,
            self.started,
            self.diagnostics,
            self.ended_at,
        )


@dataclass
class AgentAnswer:
    """What the agent did: its reply, or why there is none."""

    reply: AgentReply | None
    error: str | None
    error_kind: str | None
    latency_ms: int
    transcript: Any = None
    """What the agent exchanged with a model: its reply's, or its exception's."""
    failure: Failure | None = None
    """The agent's exception, with its traceback, stderr tail or unreachable endpoint."""
    played: Played | None = None
    """A conversation: how far it got."""


async def run_trial(setup: TrialSetup) -> PlayedTrial:
    task = setup.task.task
    invocation_id = serial_id("inv-")
    boundary = ToolBoundary(
        agent_id=setup.agent.agent_id,
        task_id=task.task_id,
        trial=setup.trial,
        invocation_id=invocation_id,
        fixtures=setup.fixtures,
        live=setup.live,
    )
    started = _started_event(setup, boundary)
    invoked = await _invoke(setup, boundary)
    reply = invoked.reply
    diagnostics: dict[str, Any] = {
        "output": reply.output if reply else None,
        "error": invoked.error,
        "errorKind": invoked.error_kind,
        "latencyMs": invoked.latency_ms,
    }
    if invoked.transcript is not None:
        diagnostics["transcript"] = invoked.transcript
    if invoked.played is not None:  # kept here, not at commit: it travels with a Ray trial
        diagnostics["conversation"] = [
            {"turn": m.turn, "role": m.role, "content": m.content} for m in boundary.messages
        ]
    if invoked.failure is not None:
        diagnostics.update(invoked.failure.diagnostics())
    verdicts: tuple[float, ...] | None = None
    judged: tuple[FindingTag, ...] = ()
    if invoked.error is None and reply is not None and task.expected.rubric is not None:
        verdicts, judged, unreached = await judge_trial(setup, reply, diagnostics)
        if unreached is not None:  # the judge could not be reached: not the agent's fault
            invoked = replace(invoked, error=diagnostics["judgeError"], error_kind=INFRA)
            diagnostics.update(error=invoked.error, errorKind=INFRA, endpoint=unreached.endpoint)
    record = TrialRecord(
        task.task_id,
        setup.trial,
        reply.output if reply else None,
        boundary.trajectory(),
        error=invoked.error,
        cost_usd=reply.cost_usd if reply is not None else None,
        latency_ms=invoked.latency_ms,
        verdicts=verdicts,
        infrastructure=invoked.error_kind == INFRA,
        turns=None if invoked.played is None else invoked.played.turns,
        exhausted=invoked.played is not None and invoked.played.exhausted,
        user_simulator=invoked.error_kind == USER_SIMULATOR,
    )
    if setup.safety is not None:
        tags, located = trial_findings(setup.safety, setup.task, record, judged)
        record = replace(record, findings=tags)
        diagnostics["safetyFindings"] = located
    return PlayedTrial(setup, boundary, invoked, record, started, diagnostics, utc_stamp())


def finish_trial(plan: GradingPlan, done: PlayedTrial) -> GradedTrial:
    """Grade the trial and give it its closing events (bounded CPU work: run it off the
    event loop, which a host shares with its requests)."""
    setup, boundary, record = done.setup, done.boundary, done.record
    grade = grade_trial(plan, setup.task, record)
    done.diagnostics["calls"] = [c.as_dict() for c in boundary.calls]
    closing = _closing_events(setup, boundary, done.invoked, grade, record, done.ended_at)
    events = [done.started, *boundary.events(), *closing]
    return GradedTrial(record, grade, boundary.invocation_id, events, done.diagnostics)


def _started_event(setup: TrialSetup, boundary: ToolBoundary) -> Pending:
    ext = boundary.ext
    listing = boundary.listing
    if listing:  # the servers' listing goes with the trial: its log replays it (fixtures.py)
        ext = {EXT: {**ext[EXT], TOOL_LISTING: dict(listing)}}
    return pending(
        INVOCATION_STARTED,
        {
            "invocationId": boundary.invocation_id,
            "agentId": setup.agent.agent_id,
            "source": "run-api",
            **ext,
        },
    )


async def _invoke(setup: TrialSetup, boundary: ToolBoundary) -> AgentAnswer:
    """Run the agent behind the boundary, under the timeout; any failure is the trial's."""
    task = setup.task.task
    memory = tuple(task.fixtures.memory_seed or ()) if task.fixtures else ()
    context = TrialContext(
        task.task_id,
        setup.trial,
        task.input,
        memory,
        boundary.tool_names,
        setup.task.named_tools,
        boundary.listing,
    )
    reply, error, error_kind, transcript = None, None, None, None
    failed: Failure | None = None
    played = Played() if task.conversation is not None else None
    started = time.monotonic()
    try:
        if setup.timeout_s is None:  # no timer to arm and cancel per trial
            reply = await _play(setup, context, boundary, played)
        else:
            async with asyncio.timeout(setup.timeout_s):  # no task of its own, as wait_for's
                reply = await _play(setup, context, boundary, played)
        size = check_reply(reply)
        if played is None:  # a conversation counted each reply as it came
            boundary.admit(size, MAX_OUTPUT_CHARS, "output-too-large", "the output")
    except ContentTooLargeError:
        reply = None  # the trial errors with the boundary's breach, below
    except ToolMissError:
        error_kind = "fixture-miss"  # the miss propagated: the trial has already failed closed
    except TimeoutError:
        error, error_kind = f"timed out after {setup.timeout_s:g} s", "timeout"
    except AgentStalledError:
        raise  # not this trial's error: its run cannot go on (runner/ending.py)
    except UserSimulatorError as exc:  # the simulated user's failure, counted apart
        error, error_kind = cut(str(exc)), USER_SIMULATOR  # the reason names the user
        failed = Failure(error, error_kind)
    except AgentProtocolError as exc:
        error, error_kind = cut(f"protocol error: {exc}"), "protocol"
        failed = Failure(error, error_kind, stderr=stderr_of(exc))
        reply = None  # what it returned is not a reply the run can record
    except Exception as exc:  # any failure of the agent is that trial's error, not the run's
        failed = failure(exc)
        error, error_kind = failed.error, failed.kind
        reply, transcript = None, getattr(exc, "transcript", None)
    finally:
        boundary.closed = True
    breach = boundary.breach
    if breach is not None:  # over a limit: an error, whatever the agent made of it
        error, error_kind, reply, transcript = str(breach), breach.kind, None, None
    elif boundary.unreachable is not None:  # a live tool's server: whatever the agent did
        failed = failure(boundary.unreachable)
        error, error_kind, reply = failed.error, failed.kind, None
    elapsed_ms = (time.monotonic() - started) * 1000
    reported = reply.latency_ms if reply is not None else None
    latency_ms = round(elapsed_ms if reported is None else reported)
    if played is not None:  # a conversation's, turn by turn, the failed turn's last
        transcript = _turns_transcript(played, reply is None and error is not None, transcript)
    elif reply is not None:
        transcript = reply.transcript
    return AgentAnswer(reply, error, error_kind, latency_ms, transcript, failed, played)


def _turns_transcript(played: Played, failed: bool, failing: Any) -> Any:
    """The transcripts of a conversation's turns, and of the turn it failed in, if its
    exception carried one; None when no turn had any."""
    turns = list(played.transcripts or ())
    if failed and failing is not None:
        turns.append({"turn": played.turns, "transcript": failing})
    return turns or None


async def _play(
    setup: TrialSetup, context: TrialContext, boundary: ToolBoundary, played: Played | None
) -> AgentReply:
    """One exchange, or a whole conversation with the task's user."""
    conversation = setup.task.task.conversation
    if conversation is None or played is None:
        return await setup.agent.run(context, boundary)
    user = (setup.users or UserPlayers()).player(conversation, setup.trial, setup.task.task_id)
    return await converse(context, setup.agent, boundary, conversation, user, played)


def _closing_events(
    setup: TrialSetup,
    boundary: ToolBoundary,
    invoked: AgentAnswer,
    grade: TrialGrade,
    record: TrialRecord,
    stamp: str,
) -> list[Pending]:
    """``agent.decided``, ``agent.invocation-completed`` and the trial's ``eval.scored``."""
    agent_id, ext, kind = setup.agent.agent_id, boundary.ext, invoked.error_kind
    outcome = "failed" if kind else "completed"
    scored: dict[str, Any] = {
        "taskId": record.task_id,
        "score": grade.score,
        "passed": grade.passed,
        "latencyMs": invoked.latency_ms,
    }
    if record.cost_usd is not None:
        scored["costUsd"] = record.cost_usd
    scored_ext = dict(ext[EXT])
    if setup.safety is not None:
        count, tags = scored_members(record.findings)
        scored.update(count)
        scored_ext.update(tags)
    return [
        pending(DECIDED, {"agentId": agent_id, "decision": outcome, **ext}, stamp),
        pending(
            INVOCATION_COMPLETED,
            {
                "invocationId": boundary.invocation_id,
                "agentId": agent_id,
                "outcome": outcome,
                EXT: {**ext[EXT], **({"error": kind} if kind else {}), **_conversation(invoked)},
            },
            stamp,
        ),
        pending(EVAL_SCORED, {**scored, EXT: scored_ext}, stamp),
    ]


def _conversation(invoked: AgentAnswer) -> dict[str, Any]:
    """A conversation trial's turns and how it ended, for its ``agent.invocation-completed``."""
    played = invoked.played
    if played is None:
        return {}
    ended = ENDED_AT_MAX_TURNS if played.exhausted else ENDED_BY_USER
    return {CONVERSATION: {"turns": played.turns, "ended": ended}}
