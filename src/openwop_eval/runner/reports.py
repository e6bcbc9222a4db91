"""Reports of a finished run for people and CI: a rich JSON report, JUnit XML and Markdown.

Unlike the summary and the events, the report is a local diagnostic and carries content:
outputs, trajectories, judge verdicts and the reason each trial failed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from .. import limits
from ..core import Reason, SuiteGrade, TaskGrade, TrialGrade


def first_failure(trial: TrialGrade) -> str | None:
    return str(trial.reasons[0]) if trial.reasons and not trial.passed else None


def failure_lines(task: TaskGrade, count: int) -> list[str]:
    """``#N reason`` for each failed trial the task keeps (its first few), then a count of
    the others; ``count`` is the trials of the task."""
    lines = [f"#{t.index + 1} {failure}" for t in task.failures if (failure := first_failure(t))]
    more = count - task.passed_trials - len(task.failures)
    if more > 0:
        lines.append(f"… and {more} more failed trial{'s' if more > 1 else ''} (all in the report)")
    return lines


def listed_tasks(grade: SuiteGrade) -> tuple[tuple[TaskGrade, ...], str | None]:
    """The tasks a table lists, and a line on those it leaves out (None: it lists them all).
    Up to ``MAX_TABLE_TASKS`` tasks, every one; past it, the first ``MAX_TABLE_TASKS`` that
    did not pass: ten thousand rows help nobody, and took seconds to print."""
    tasks, most = grade.tasks, limits.MAX_TABLE_TASKS
    if len(tasks) <= most:
        return tasks, None
    failed = [t for t in tasks if not t.passed]
    shown, passed = tuple(failed[:most]), len(tasks) - len(failed)
    said = [f"the {passed:,} tasks that passed are not listed"] if passed else []
    if len(failed) > most:
        said.insert(0, f"listed: the first {most} of the {len(failed):,} that did not pass")
    why = f"past {most} tasks only those that did not pass are; the report has every task"
    return shown, f"{'; '.join(said)} ({why})"


def report_dict(
    run_id: str,
    agent_id: str,
    grade: SuiteGrade,
    summary: dict[str, Any],
    diagnostics: dict[tuple[str, int], dict[str, Any]],
) -> dict[str, Any]:
    suite = grade.plan.suite
    return {
        "reportVersion": 1,
        "runId": run_id,
        "suite": {"suiteId": suite.suite_id, "version": suite.version},
        "agentId": agent_id,
        "passed": grade.passed,
        "reasons": [r.as_dict() for r in grade.reasons],
        "summary": summary,
        "tasks": [_task(task, diagnostics) for task in grade.tasks],
    }


def _task(task: TaskGrade, diagnostics: dict[tuple[str, int], dict[str, Any]]) -> dict[str, Any]:
    return {
        "taskId": task.task_id,
        "score": task.score,
        "gatedScore": task.gated_score,
        "passed": task.passed,
        "safetyFindings": [f.as_dict() for f in task.findings],
        "reasons": [r.as_dict() for r in task.reasons],
        "trials": [_trial(t, diagnostics.get((task.task_id, t.index), {})) for t in task.trials],
    }


def _trial(trial: TrialGrade, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "trial": trial.index,
        "outcome": trial.outcome,
        "score": trial.score,
        "gatingScore": trial.gating,
        "outputScore": trial.output_score,
        "passed": trial.passed,
        "trajectoryMatched": None if trial.trajectory is None else trial.trajectory.matched,
        "reasons": [r.as_dict() for r in trial.reasons],
        "costUsd": trial.cost_usd,
        "latencyMs": trial.latency_ms,
        **{k: v for k, v in extra.items() if k not in ("latencyMs",)},
    }


def junit_xml(grade: SuiteGrade, run_id: str) -> str:
    suite = grade.plan.suite
    failures = sum(not t.passed for t in grade.tasks)
    root = ET.Element(
        "testsuites", name="openwop-eval", tests=str(len(grade.tasks)), failures=str(failures)
    )
    node = ET.SubElement(
        root,
        "testsuite",
        name=f"{suite.suite_id}@{suite.version}",
        tests=str(len(grade.tasks)),
        failures=str(failures),
    )
    ET.SubElement(ET.SubElement(node, "properties"), "property", name="runId", value=run_id)
    for task in grade.tasks:
        case = ET.SubElement(node, "testcase", classname=suite.suite_id, name=task.task_id)
        lines = [_trial_line(t) for t in task.trials]
        if not task.passed:
            message = str(task.reasons[0]) if task.reasons else "the task did not pass"
            failure = ET.SubElement(case, "failure", message=message, type="eval-task-failed")
            failure.text = "\n".join(lines)
        ET.SubElement(case, "system-out").text = (
            f"score {task.score:g}, gatedScore {task.gated_score:g}\n" + "\n".join(lines)
        )
    if not grade.passed:
        case = ET.SubElement(node, "testcase", classname=suite.suite_id, name="(suite gate)")
        ET.SubElement(
            case,
            "failure",
            message="; ".join(str(r) for r in grade.reasons),
            type="eval-suite-failed",
        )
        node.set("tests", str(len(grade.tasks) + 1))
        node.set("failures", str(failures + 1))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _trial_line(trial: TrialGrade) -> str:
    failure = first_failure(trial)
    status = "passed" if trial.passed else trial.outcome
    return f"trial {trial.index + 1}: {status}, score {trial.score:g}" + (
        f" — {failure}" if failure else ""
    )


def markdown(grade: SuiteGrade, run_id: str) -> str:
    suite = grade.plan.suite
    verdict = "✅ passed" if grade.passed else "❌ did not pass"
    lines = [
        f"### Eval `{suite.suite_id}@{suite.version}`: {verdict}",
        "",
        f"Aggregate score {grade.aggregate_score:.3g}, gated {grade.gated_aggregate_score:.3g}, "
        f"pass score {float(grade.plan.pass_score):g}; "
        f"{grade.passed_count}/{len(grade.tasks)} tasks passed. Run `{run_id}`.",
    ]
    tasks, left_out = listed_tasks(grade)
    if tasks:
        lines += [
            "",
            "| task | score | gated | passed | first failure |",
            "| --- | --- | --- | --- | --- |",
        ]
    for task in tasks:
        failure = next(
            (f"trial {t.index + 1}: {first_failure(t)}" for t in task.failures if first_failure(t)),
            "",
        )
        lines.append(
            f"| `{task.task_id}` | {task.score:.3g} | {task.gated_score:.3g} | "
            f"{'yes' if task.passed else '**no**'} | {_cell(failure)} |"
        )
    if left_out is not None:
        lines += ["", left_out[0].upper() + left_out[1:] + "."]
    if grade.reasons:
        lines += ["", *(f"- {_cell(str(r))}" for r in grade.reasons)]
    found = [t for t in grade.tasks if t.findings]
    if found:
        lines += ["", "Safety findings:", ""]
        lines += [
            f"- `{t.task_id}`: " + ", ".join(f"{f.kind} ({f.severity})" for f in t.findings)
            for t in found
        ]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reason_text(reasons: tuple[Reason, ...]) -> str:
    return "; ".join(str(r) for r in reasons)
