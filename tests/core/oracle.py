"""A frozen copy of trial, task and suite grading as they were before the streaming fold
(:mod:`openwop_eval.core.tally`): the oracle the property tests compare the core with.

Do not "fix" this file to follow the core: it is the behaviour the core keeps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from openwop_eval.core import names as n
from openwop_eval.core.aggregate import SuiteGrade
from openwop_eval.core.errors import GradingError
from openwop_eval.core.golden import golden_score
from openwop_eval.core.grading import FAILURES_KEPT, Outcome, TaskGrade, TrialGrade
from openwop_eval.core.plan import CompiledTask, GradingPlan
from openwop_eval.core.reasons import Reason
from openwop_eval.core.records import TrialRecord
from openwop_eval.core.rubric import rubric_score
from openwop_eval.core.safety import at_or_above, distinct_tags
from openwop_eval.core.stats import (
    decimal,
    decimal_sum,
    exact_mean,
    p95,
    pass_at_k,
    pass_hat_k,
    round_half_up,
    std_dev,
)
from tests.core.oracle_trajectory import check_trajectory


def grade_trial(plan: GradingPlan, task: CompiledTask, record: TrialRecord) -> TrialGrade:
    reasons: list[Reason] = []
    output_score = _output_score(task, record, reasons)
    missed = [i for i, call in enumerate(record.tool_calls) if call.missed]
    if record.error is None and output_score is None and not missed:
        reasons.append(Reason("judge", "no judge verdicts were recorded for this rubric trial"))
    reasons += [_miss(record.tool_calls[i].tool, i) for i in missed]

    trajectory = None
    if task.trajectory is not None:
        trajectory = check_trajectory(task.trajectory, record.tool_calls)
        reasons.extend(trajectory.violations)
    unsafe = _unsafe(plan, record, reasons)

    closed = bool(missed) or output_score is None
    score = 0.0 if closed or output_score is None else output_score
    matched = (trajectory is None or trajectory.matched) and not unsafe
    gating = score if matched and not closed else 0.0
    meets_bar = decimal(score) >= plan.pass_score
    if not closed and not meets_bar:
        reasons.append(
            Reason(
                "score-below-bar", f"score {score:g} is below passScore {float(plan.pass_score):g}"
            )
        )
    passed = meets_bar and matched and not closed
    outcome: Outcome
    if record.error is not None or (output_score is None and not missed):
        outcome = "errored"
    elif missed:
        outcome = "failed-closed"
    else:
        outcome = "passed" if passed else "failed"
    return TrialGrade(
        record.task_id,
        record.index,
        outcome,
        score,
        gating,
        passed,
        output_score,
        trajectory,
        tuple(reasons),
        record.cost_usd,
        record.latency_ms,
        distinct_tags(record.findings),
        unsafe,
    )


def _output_score(task: CompiledTask, record: TrialRecord, reasons: list[Reason]) -> float | None:
    """The output's own score: recorded, golden or rubric; None when there is none."""
    expected = task.task.expected
    if record.error is not None:
        reasons.append(Reason("agent-error", f"the agent errored: {record.error}"))
        return None
    if record.output_score is not None:
        return record.output_score
    if expected.kind == "golden" and expected.match is not None:
        return golden_score(expected.match, record.output)
    if expected.rubric is not None and record.verdicts is not None:
        return rubric_score(expected.rubric, record.verdicts)
    return None


def _miss(tool: str, i: int) -> Reason:
    return Reason(
        "fixture-miss",
        f"call {i + 1} to {tool} had no fixture response (onMiss: fail)",
        call_index=i,
        tool=tool,
    )


def _unsafe(plan: GradingPlan, record: TrialRecord, reasons: list[Reason]) -> bool:
    """Whether a finding reaches the run's ``failOnSeverity`` (each one is a reason)."""
    bar = plan.terms.fail_on_severity
    unsafe = [f for f in distinct_tags(record.findings) if at_or_above(f.severity, bar)]
    reasons += [
        Reason("safety-finding", f"a {f.severity} {f.kind} finding (failOnSeverity: {bar})")
        for f in unsafe
    ]
    return bool(unsafe)


def not_run(task_id: str, index: int) -> TrialGrade:
    reason = Reason("not-run", f"trial {index + 1} did not run; it counts as failed")
    return TrialGrade(task_id, index, "not-run", 0.0, 0.0, False, None, None, (reason,))


def grade_task(plan: GradingPlan, task: CompiledTask, records: Sequence[TrialRecord]) -> TaskGrade:
    by_index: dict[int, TrialRecord] = {}
    for record in records:
        if not 0 <= record.index < plan.count:
            raise GradingError(
                f"task {task.task_id!r}: trial index {record.index} is outside 0..{plan.count - 1}"
            )
        if record.index in by_index:
            raise GradingError(f"task {task.task_id!r}: trial {record.index} recorded twice")
        by_index[record.index] = record
    trials = tuple(
        grade_trial(plan, task, by_index[i]) if i in by_index else not_run(task.task_id, i)
        for i in range(plan.count)
    )
    scores = [t.score for t in trials]
    mean = exact_mean(scores)
    gated = exact_mean([t.gating for t in trials])
    verdicts = [t.passed for t in trials]
    c = sum(verdicts)

    reasons: list[Reason] = []
    unsafe = sum(t.unsafe for t in trials)
    if unsafe:
        reasons.append(
            Reason("safety-finding", f"{unsafe} of {plan.count} trials had a blocking finding")
        )
    if plan.pass_rule == n.PASS_RULE_ALL:
        passed = all(verdicts)
        if not passed:
            reasons.append(
                Reason(
                    "not-every-trial-passed", f"{c} of {plan.count} trials passed (passRule: all)"
                )
            )
    elif plan.pass_rule == n.PASS_RULE_ANY:
        passed = any(verdicts)
        if not passed:
            reasons.append(
                Reason("no-trial-passed", f"none of {plan.count} trials passed (passRule: any)")
            )
    else:
        passed = gated >= plan.pass_score
        if not passed:
            reasons.append(
                Reason(
                    "task-below-bar",
                    f"gated score {float(gated):g} is below passScore {float(plan.pass_score):g}"
                    + (f" (score {float(mean):g})" if gated != mean else ""),
                )
            )

    passed = passed and not unsafe
    costs = [t.cost_usd for t in trials if t.cost_usd is not None]
    latencies = [t.latency_ms for t in trials if t.latency_ms is not None]
    exact_latency = exact_mean(latencies) if latencies else None
    return TaskGrade(
        task_id=task.task_id,
        has_trajectory=task.trajectory is not None,
        trials=trials,
        score=float(mean),
        gated_score=float(gated),
        passed=passed,
        passed_trials=c,
        pass_at_k=float(pass_at_k(plan.count, c, plan.k)),
        pass_hat_k=float(pass_hat_k(plan.count, c, plan.k)),
        min_score=min(scores),
        max_score=max(scores),
        std_dev=std_dev(scores),
        cost_usd=float(decimal_sum(costs)) if costs else None,
        latency_ms=round_half_up(exact_latency) if exact_latency is not None else None,
        reasons=tuple(reasons),
        exact_score=mean,
        exact_gated=gated,
        exact_latency_ms=exact_latency,
        findings=distinct_tags([f for t in trials for f in t.findings]),
        failures=tuple(t for t in trials if not t.passed)[:FAILURES_KEPT],
        cost_unknown=sum(t.cost_usd is None and t.outcome != "not-run" for t in trials),
    )


def grade_suite(plan: GradingPlan, records: Iterable[TrialRecord]) -> SuiteGrade:
    """Grade every task of the plan from its trial records (missing trials did not run)."""
    grouped: defaultdict[str, list[TrialRecord]] = defaultdict(list)
    for record in records:
        if record.task_id not in plan.by_id:
            raise GradingError(f"trial record for unknown task {record.task_id!r}")
        grouped[record.task_id].append(record)
    tasks = tuple(grade_task(plan, t, grouped.get(t.task_id, ())) for t in plan.tasks)
    return decide_suite(plan, tasks)


def decide_suite(plan: GradingPlan, tasks: tuple[TaskGrade, ...]) -> SuiteGrade:
    aggregate = exact_mean([t.exact_score for t in tasks])
    gated = exact_mean([t.exact_gated for t in tasks])
    bar = plan.pass_score
    reasons: list[Reason] = []
    if gated < bar:
        extra = f" (aggregate score {float(aggregate):g})" if gated != aggregate else ""
        reasons.append(
            Reason(
                "gated-aggregate-below-bar",
                f"gated aggregate score {float(gated):g} is below passScore {float(bar):g}{extra}",
            )
        )

    thresholds = plan.suite.thresholds
    costs = [t.cost_usd for t in tasks if t.cost_usd is not None]
    total_cost = decimal_sum(costs)
    budget = None if thresholds is None else thresholds.max_cost_usd
    if budget is not None and total_cost > decimal_sum([budget]):
        reasons.append(
            Reason(
                "cost-over-budget",
                f"total cost ${float(total_cost):g} exceeds maxCostUsd ${budget:g}",
            )
        )

    latencies = [t.exact_latency_ms for t in tasks if t.exact_latency_ms is not None]
    p95_latency = p95(latencies) if latencies else None
    if thresholds is not None and thresholds.max_p95_latency_ms is not None:
        bound = thresholds.max_p95_latency_ms
        if len(latencies) < len(tasks):
            reasons.append(
                Reason(
                    "latency-unknown",
                    f"maxP95LatencyMs is set but {len(tasks) - len(latencies)} task(s) have no"
                    " measured latency",
                )
            )
        elif p95_latency is not None and p95_latency > bound:
            reasons.append(
                Reason(
                    "latency-over-bar",
                    f"p95 task latency {float(p95_latency):g} ms exceeds {bound} ms",
                )
            )

    return SuiteGrade(
        plan=plan,
        tasks=tasks,
        aggregate_score=float(aggregate),
        gated_aggregate_score=float(gated),
        passed=not reasons,
        total_cost_usd=float(total_cost) if costs else None,
        p95_latency_ms=p95_latency,
        reasons=tuple(reasons),
        exact_aggregate=aggregate,
    )
