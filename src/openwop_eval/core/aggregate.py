"""Suite grading: the aggregate, the gating aggregate and the suite ``passed`` (RFC 0246 §B).

``aggregateScore`` is the mean of task scores; ``gatedAggregateScore`` the mean of task gated
scores; the suite passes iff the exact gating aggregate ≥ P, the total cost ≤ ``maxCostUsd``
(if set; an unreported cost counts as 0) and the nearest-rank p95 of task latencies ≤
``maxP95LatencyMs`` (if set; a task with no measured latency fails this condition closed).
Decisions use the exact task means (``TaskGrade.exact_*``), never their rounded floats.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .grading import TaskGrade
from .plan import GradingPlan
from .reasons import Reason
from .stats import decimal_sum, exact_mean, p95


@dataclass(frozen=True, slots=True)
class SuiteGrade:
    plan: GradingPlan
    tasks: tuple[TaskGrade, ...]
    aggregate_score: float
    gated_aggregate_score: float
    passed: bool
    total_cost_usd: float | None
    p95_latency_ms: Fraction | None
    reasons: tuple[Reason, ...]
    exact_aggregate: Fraction = Fraction(0)
    """The exact mean of task scores; ``aggregate_score`` is it rounded once."""

    @property
    def passed_count(self) -> int:
        return sum(t.passed for t in self.tasks)


def decide_suite(plan: GradingPlan, tasks: tuple[TaskGrade, ...]) -> SuiteGrade:
    aggregate = exact_mean([t.exact_score for t in tasks])
    gated = exact_mean([t.exact_gated for t in tasks])
    return decide(plan, tasks, aggregate, gated)


def decide(
    plan: GradingPlan, tasks: tuple[TaskGrade, ...], aggregate: Fraction, gated: Fraction
) -> SuiteGrade:
    """The suite verdict, given the exact means of the task scores and gated scores."""
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
