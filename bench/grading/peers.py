"""Adapters that feed the same corpus to two other trajectory matchers.

* LangChain ``agentevals``: ``create_trajectory_match_evaluator`` over OpenAI-style message
  lists, one assistant message per tool call (so ``strict`` sees the order), reference =
  the task's clean path.
* Google ADK: ``TrajectoryEvaluator`` with a ``ToolTrajectoryCriterion`` (threshold 1.0)
  over one ``Invocation`` per trial, expected = the task's clean path.

Neither has argument matchers, a forbidden list, fixture misses or agent errors. A trial is
given to them as recorded: a missed call is an ordinary call, and an errored trial is its
calls with no final answer. Import failures are reported, not raised: the peers are
optional.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.grading.corpus import Call, Corpus, Task

# Keep LangSmith from tracing (and from reaching the network) before anything imports it.
os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")

Grader = Callable[[Any], bool]


@dataclass(frozen=True)
class Peer:
    name: str
    version: str
    timed_modes: tuple[str, ...]
    """Modes run over the whole corpus and timed, one configuration for every task."""
    inputs: Callable[[Corpus], list[Any]]
    """One prepared input per trial, in corpus order (built before any timing)."""
    grader: Callable[[str], Grader]
    closest: Callable[[Task], str]
    """The mode that best expresses a task's own constraints (for the per-task row)."""


def load_peers(wanted: Sequence[str]) -> tuple[list[Peer], dict[str, str]]:
    """The peers that import here, and why each other one does not."""
    loaders = {"agentevals": _agentevals, "google-adk": _adk}
    found, missing = [], {}
    for name in wanted:
        try:
            found.append(loaders[name]())
        except Exception as exc:  # an optional peer must never stop the benchmark
            missing[name] = f"{type(exc).__name__}: {exc}"
    return found, missing


# --- agentevals ---------------------------------------------------------------------------


def _agentevals() -> Peer:
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    def messages(task: Task, calls: Sequence[Call], answer: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "user", "content": task.input["message"]}]
        for i, call in enumerate(calls):
            call_id = f"call_{i}"
            out.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.tool, "arguments": json.dumps(call.args)},
                        }
                    ],
                }
            )
            reply = "no recorded response" if call.missed else "ok"
            out.append({"role": "tool", "tool_call_id": call_id, "content": reply})
        if answer is not None:
            out.append({"role": "assistant", "content": answer})
        return out

    def inputs(corpus: Corpus) -> list[Any]:
        prepared = []
        for task in corpus.tasks:
            reference = messages(task, task.reference, task.golden)
            prepared += [(messages(task, t.calls, t.output), reference) for t in task.trials]
        return prepared

    def grader(mode: str) -> Grader:
        trajectory, _, args = mode.partition("/args=")
        # The modes are Literal types upstream; ours come from strings built above.
        create: Any = create_trajectory_match_evaluator
        evaluate = create(trajectory_match_mode=trajectory, tool_args_match_mode=args or "exact")
        return lambda x: bool(evaluate(outputs=x[0], reference_outputs=x[1])["score"])

    def closest(task: Task) -> str:
        # No mode keeps order and allows extras: in-order falls back to superset, which
        # ignores order. Argument mode "superset" means the call's keys ⊇ the reference's.
        trajectory = "strict" if task.order == "exact" else "superset"
        args = "exact" if task.args_match == "exact" else "superset"
        return f"{trajectory}/args={args}"

    return Peer(
        name="agentevals",
        version=importlib.metadata.version("agentevals"),
        timed_modes=(
            "strict/args=exact",
            "unordered/args=exact",
            "superset/args=exact",
            "subset/args=exact",
        ),
        inputs=inputs,
        grader=grader,
        closest=closest,
    )


# --- Google ADK ---------------------------------------------------------------------------


def _adk() -> Peer:
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.evaluator import EvalStatus
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
    from google.genai import types

    def invocation(task: Task, calls: Sequence[Call], answer: str | None) -> Any:
        return Invocation(
            user_content=types.Content(role="user", parts=[types.Part(text=task.input["message"])]),
            final_response=None
            if answer is None
            else types.Content(role="model", parts=[types.Part(text=answer)]),
            intermediate_data=IntermediateData(
                tool_uses=[types.FunctionCall(name=c.tool, args=c.args) for c in calls]
            ),
        )

    def inputs(corpus: Corpus) -> list[Any]:
        prepared = []
        for task in corpus.tasks:
            expected = [invocation(task, task.reference, task.golden)]
            prepared += [([invocation(task, t.calls, t.output)], expected) for t in task.trials]
        return prepared

    def grader(mode: str) -> Grader:
        criterion = ToolTrajectoryCriterion(threshold=1.0, match_type=mode)
        evaluator = TrajectoryEvaluator(
            eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
        )
        passed = EvalStatus.PASSED
        return lambda x: evaluator.evaluate_invocations(x[0], x[1]).overall_eval_status == passed

    def closest(task: Task) -> str:
        # Arguments compare by equality or not at all: there is no subset mode.
        return {"exact": "EXACT", "in-order": "IN_ORDER", "any-order": "ANY_ORDER"}[task.order]

    return Peer(
        name="google-adk",
        version=importlib.metadata.version("google-adk"),
        timed_modes=("EXACT", "IN_ORDER", "ANY_ORDER"),
        inputs=inputs,
        grader=grader,
        closest=closest,
    )
