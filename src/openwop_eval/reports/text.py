"""The renderings of a finished run's report for CI: JUnit XML and Markdown, and the rows
a table lists (the terminal's run table reads them too). All of them read the one report
model (:mod:`.report_model`); the JSON report is its serialisation.

Unlike the summary and the events, a report is a local diagnostic and carries content:
outputs, trajectories, judge verdicts and the reason each trial failed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ..base import limits
from ..core import Reason
from ..core.gate import named
from .model import Report, TaskReport, TrialReport


def failure_lines(task: TaskReport, count: int) -> list[str]:
    """``#N reason`` for each failed trial the task keeps (its first few), then a count of
    the others; ``count`` is the trials of the task."""
    lines = [f"#{t.index + 1} {failure}" for t in task.failures if (failure := t.first_failure)]
    more = count - task.passed_trials - len(task.failures)
    if more > 0:
        lines.append(f"… and {more} more failed trial{'s' if more > 1 else ''} (all in the report)")
    return lines


def listed_tasks(report: Report) -> tuple[tuple[TaskReport, ...], str | None]:
    """The tasks a table lists, and a line on those it leaves out (None: it lists them all).
    Up to ``MAX_TABLE_TASKS`` tasks, every one; past it, the first ``MAX_TABLE_TASKS`` that
    did not pass: ten thousand rows help nobody, and took seconds to print."""
    tasks, most = report.tasks, limits.MAX_TABLE_TASKS
    if len(tasks) <= most:
        return tasks, None
    failed = [t for t in tasks if not t.passed]
    shown, passed = tuple(failed[:most]), len(tasks) - len(failed)
    said = [f"the {passed:,} tasks that passed are not listed"] if passed else []
    if len(failed) > most:
        said.insert(0, f"listed: the first {most} of the {len(failed):,} that did not pass")
    why = f"past {most} tasks only those that did not pass are; the report has every task"
    return shown, f"{'; '.join(said)} ({why})"


def junit_xml(report: Report) -> str:
    """One test case per task (its trials listed), and one for the suite's gate when it
    did not pass. A task that did not pass fails its case when it shut the gate; when the
    gate passed, or the task is quarantined, its case is skipped, saying why."""
    tasks = report.tasks
    failures = sum(report.gate.gates(t.task_id) for t in tasks if not t.passed)
    skipped = sum(not t.passed for t in tasks) - failures
    counts = {"tests": str(len(tasks)), "failures": str(failures), "skipped": str(skipped)}
    root = ET.Element("testsuites", counts, name="openwop-eval")
    node = ET.SubElement(root, "testsuite", counts, name=report.title)
    ET.SubElement(ET.SubElement(node, "properties"), "property", name="runId", value=report.run_id)
    for task in tasks:
        case = ET.SubElement(node, "testcase", classname=report.suite_id, name=task.task_id)
        lines = [_trial_line(t) for t in task.trials]
        if not task.passed:
            message = str(task.reasons[0]) if task.reasons else "the task did not pass"
            if report.gate.gates(task.task_id):
                failure = ET.SubElement(case, "failure", message=message, type="eval-task-failed")
                failure.text = "\n".join(lines)
            else:
                why = f"did not pass ({message}); {not_gating(report, task.task_id)}"
                ET.SubElement(case, "skipped", message=why)
        ET.SubElement(case, "system-out").text = (
            f"score {task.score:g}, gatedScore {task.gated_score:g}\n" + "\n".join(lines)
        )
    if not report.passed:
        case = ET.SubElement(node, "testcase", classname=report.suite_id, name="(suite gate)")
        ET.SubElement(
            case, "failure", message=reason_text(report.reasons), type="eval-suite-failed"
        )
        node.set("tests", str(len(tasks) + 1))
        node.set("failures", str(failures + 1))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def not_gating(report: Report, task_id: str) -> str:
    """Why a task that did not pass leaves the gate open."""
    held = {q.task_id: q for q in report.gate.quarantine if not q.expired}
    if task_id in held:
        return f"quarantined until {held[task_id].until}: {held[task_id].reason}"
    return "the gate passed without it (requireAllTasks would count it)"


def verdict_text(report: Report) -> str:
    """The run's verdict in words: ``PASSED``, ``PASSED — 1 task failed: a`` (the gate is
    open, but not every task passed), or ``NOT PASSED``."""
    if not report.passed:
        return "NOT PASSED"
    failed = report.gate.failed_tasks
    if not failed:
        return "PASSED"
    return f"PASSED — {len(failed)} task{'s' if len(failed) != 1 else ''} failed: {named(failed)}"


def simulator_line(report: Report) -> str | None:
    """The trials that errored because their simulated user failed, counted apart from the
    agent's errors (those only when the report lists its trials); None when there are none."""
    failed = [t for t in report.tasks if t.user_simulator]
    count = sum(t.user_simulator for t in failed)
    if not count:
        return None
    line = (
        f"{_trials(count)} errored because the simulated user failed, not the agent"
        f" ({named([t.task_id for t in failed])}): the run did not complete, the gate stays shut"
    )
    if any(t.trials for t in report.tasks):
        agent = sum(
            tr.outcome == "errored" and not tr.user_simulator
            for t in report.tasks
            for tr in t.trials
        )
        line += f"; apart from them, {_trials(agent)} errored on the agent's side"
    return line


def _trials(count: int) -> str:
    return f"{count} trial{'s' if count != 1 else ''}"


def quarantine_lines(report: Report) -> list[str]:
    """What the gate policy's quarantine did: tasks passed over, and quarantines that ended."""
    return [
        f"quarantine of {q.task_id} ended {q.until} ({q.reason}): it gates again"
        if q.expired
        else f"{q.task_id} is quarantined until {q.until} ({q.reason}): it does not gate"
        for q in report.gate.quarantine
    ]


def _trial_line(trial: TrialReport) -> str:
    failure = trial.first_failure
    status = "passed" if trial.passed else trial.outcome
    return f"trial {trial.index + 1}: {status}, score {trial.score:g}" + (
        f" — {failure}" if failure else ""
    )


def markdown(report: Report) -> str:
    """The step summary of CI: the verdict, a row per listed task with its first failure,
    the suite's reasons and the safety findings."""
    verdict = f"✅ {verdict_text(report)}" if report.passed else "❌ did not pass"
    lines = [
        f"### Eval `{report.title}`: {verdict}",
        "",
        f"Aggregate score {report.aggregate_score:.3g}, gated {report.gated_aggregate_score:.3g},"
        f" pass score {report.pass_score:g}; "
        f"{report.passed_count}/{len(report.tasks)} tasks passed. Run `{report.run_id}`.",
    ]
    tasks, left_out = listed_tasks(report)
    if tasks:
        lines += [
            "",
            "| task | score | gated | passed | first failure |",
            "| --- | --- | --- | --- | --- |",
        ]
    for task in tasks:
        failure = next(
            (f"trial {t.index + 1}: {t.first_failure}" for t in task.failures if t.first_failure),
            "",
        )
        lines.append(
            f"| `{task.task_id}` | {task.score:.3g} | {task.gated_score:.3g} | "
            f"{'yes' if task.passed else '**no**'} | {_cell(failure)} |"
        )
    if left_out is not None:
        lines += ["", left_out[0].upper() + left_out[1:] + "."]
    if report.reasons:
        lines += ["", *(f"- {_cell(str(r))}" for r in report.reasons)]
    notes = quarantine_lines(report)
    if notes:
        lines += ["", *(f"- {_cell(note)}" for note in notes)]
    found = [t for t in report.tasks if t.findings]
    if found:
        lines += ["", "Safety findings:", ""]
        lines += [
            f"- `{t.task_id}`: " + ", ".join(f"{f.kind} ({f.severity})" for f in t.findings)
            for t in found
        ]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reason_text(reasons: Sequence[Reason]) -> str:
    return "; ".join(str(r) for r in reasons)


def task_text(task: TaskReport, count: int, run_id: str) -> str:
    """Why the task passed or not, then its failed trials' first failed constraints — the
    run table's row, one trial a line (the first few; ``count`` trials in all)."""
    head = "passed" if task.passed else (reason_text(task.reasons) or "did not pass")
    lines = [head, *(f"  {line}" for line in failure_lines(task, count))]
    lines.append(f"score {task.score:.3g}, gated {task.gated_score:.3g}; run {run_id}")
    return "\n".join(lines)
