"""The loader's contract under hostile input, shared by the fuzz tests and ``fuzz/fuzz_suites.py``.

``load_suite`` either returns a suite or raises :class:`SuiteError` with located problems
that print; nothing else. A suite it returns can be run: planned, graded, canonicalised (as
the runner does with every argument and value), stored and read back (as a resume does).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from openwop_eval import SuiteError, grade, load_suite, parse_suite
from openwop_eval.agents.base import AgentReply, ToolPort, TrialContext
from openwop_eval.core import (
    CriterionVerdict,
    JudgeRequest,
    Problem,
    Suite,
    ToolCall,
    TrialRecord,
    canonical_json,
    plan_suite,
    summary_dict,
)
from openwop_eval.core.problems import errors_in
from openwop_eval.files.suites import LoadedSuite
from openwop_eval.reports.terminal import print_problems
from openwop_eval.runner.api import run_suite
from openwop_eval.store import Store

ACCEPTED, REFUSED = "accepted", "refused"


def check_file(path: Path) -> tuple[str, LoadedSuite | None]:
    """Load ``path`` under the contract: ``accepted`` (and runnable) or ``refused``."""
    try:
        loaded = load_suite(path)
    except SuiteError as exc:
        check_problems(exc.problems)
        return REFUSED, None
    exercise(loaded.suite)
    return ACCEPTED, loaded


def check_document(doc: Any) -> str:
    """The same contract for a document that did not come from a file (the host's path)."""
    try:
        loaded = parse_suite(doc)
    except SuiteError as exc:
        check_problems(exc.problems)
        return REFUSED
    exercise(loaded.suite)
    return ACCEPTED


def check_problems(problems: Sequence[Problem]) -> None:
    """A refusal names at least one error, each located, and every problem can be printed."""
    assert errors_in(list(problems)), problems
    for problem in problems:
        assert isinstance(problem.message, str)
        assert problem.message
        assert problem.line is None or (isinstance(problem.line, int) and problem.line >= 1)
        assert problem.path.startswith("$")
    out = io.StringIO()
    print_problems(Console(file=out, width=100), "suite", problems)
    assert out.getvalue().rstrip().endswith("nothing was run")
    json.dumps([{"path": p.path, "message": p.message} for p in problems])


def exercise(suite: Suite) -> None:
    """Everything a run does with the suite that does not need an agent or a clock."""
    # exclude_unset, not exclude_none: an explicit null (an opaque input, a value) is content
    doc = suite.model_dump(by_alias=True, exclude_unset=True, mode="json")
    canonical_json(doc)
    reread = parse_suite(json.loads(json.dumps(doc)))  # what a resume reads from the store
    assert reread.suite == suite
    plan = plan_suite(suite)
    records = [
        TrialRecord(
            task.task_id,
            index,
            *_synthetic_trial(task.expected),
            verdicts=tuple(1.0 for _ in task.expected.rubric or ()) or None,
        )
        for task in suite.tasks
        for index in range(plan.count)
    ]
    canonical_json(summary_dict(grade(plan, records)))


def _synthetic_trial(expected: Any) -> tuple[Any, tuple[ToolCall, ...]]:
    output = expected.match.value if expected.match is not None else "answer"
    steps = expected.trajectory.steps if expected.trajectory is not None else ()
    calls = tuple(ToolCall(step.tool, step.args or {}) for step in steps)
    for call in calls:
        canonical_json(call.args)
    return output, calls


class StepAgent:
    """An agent that makes each step's call with the step's own arguments, then answers."""

    agent_id = "fuzz-step-agent"

    def __init__(self, suite: Suite) -> None:
        self._tasks = {task.task_id: task for task in suite.tasks}

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        expected = self._tasks[context.task_id].expected
        output, calls = _synthetic_trial(expected)
        for call in calls:
            with contextlib.suppress(LookupError):  # a fixture miss fails the trial closed
                await port.call(call.tool, call.args)
        return AgentReply(output=output)


class FullMarksJudge:
    async def judge(self, request: JudgeRequest) -> Sequence[CriterionVerdict]:
        return [CriterionVerdict(1.0) for _ in request.criteria]


def run_for_real(loaded: LoadedSuite, store: Store) -> dict[str, Any]:
    """Run the suite through the real runner into ``store``; return the summary."""
    result = run_suite(loaded, StepAgent(loaded.suite), store=store, judge=FullMarksJudge())
    summary: dict[str, Any] = result.summary
    return summary
