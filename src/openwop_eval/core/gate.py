"""The gate: the RFC 0246 ``passed`` and a suite's gate policy, decided together.

The gate is open only when the RFC's ``passed`` is true *and* every policy condition holds,
so a policy never turns an RFC fail into a pass. Quarantined tasks still count in the RFC's
aggregate (the protocol's ``passed`` is untouched); only the policies pass over them, until
their date. Reliability floors are decided on the trials a task was planned to have: a trial
that did not run counts as failed, and too few trials to show the floor is not passed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

from .aggregate import SuiteGrade, decide_suite
from .gate_policy import GateGroup, GatePolicy, LowerBound
from .grading import TaskGrade
from .plan import GradingPlan
from .reasons import Reason
from .suite import Suite

NAMED: int = 5
"""Task ids a reason names before it says how many more."""
DEFAULT_POLICY = GatePolicy()
"""The policy of a suite that declares none: only the unknown-cost rule."""


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """Whether the gate is open, and why not: RFC reasons first, then the policy's."""

    passed: bool
    rfc_passed: bool
    reasons: tuple[Reason, ...]
    """The policy conditions that shut the gate (the RFC's are the suite grade's)."""
    failed_tasks: tuple[str, ...]
    """Every task that did not pass, quarantined or not, in suite order."""
    quarantined: tuple[str, ...]
    """Tasks the policies passed over: their quarantine held on the run's day."""
    expired: tuple[str, ...]
    """Quarantined tasks whose date had passed: they gate again."""


def open_gate(grade: SuiteGrade) -> GateVerdict:
    """The gate of ``grade`` under the policy and day of the terms it was graded under."""
    terms = grade.plan.terms
    return gate_verdict(grade, terms.policy_of(grade.plan.suite), terms.day)


def still_possible(plan: GradingPlan, best: Sequence[TaskGrade]) -> bool:
    """Whether the gate can still open, given each task's best case in plan order
    (:meth:`~.tally.TaskTally.best_case`): the RFC rule and the policy, exactly."""
    grade = decide_suite(plan, tuple(best))
    return gate_verdict(grade, plan.terms.policy_of(plan.suite), plan.terms.day).passed


def gate_verdict(grade: SuiteGrade, policy: GatePolicy | None, day: str | None) -> GateVerdict:
    """The gate of ``grade`` under ``policy`` (None: :data:`DEFAULT_POLICY`) on ``day``, the
    ISO date the run started (None: no quarantine holds)."""
    policy = policy or DEFAULT_POLICY
    infrastructure = [*_infrastructure(grade), *_user_simulator(grade)]
    if not policy.quarantine and not infrastructure and not _has_conditions(policy, grade):
        return GateVerdict(grade.passed, grade.passed, (), _failed(grade), (), ())
    held = policy.quarantined_on(day)
    listed = {q.task_id for q in policy.quarantine}
    gating = tuple(t for t in grade.tasks if t.task_id not in held)
    reasons = [
        *infrastructure,
        *_unknown_cost(grade, policy),
        *_every_task(policy, gating),
        *(r for group in policy.groups for r in _group(group, gating, grade.plan.suite)),
        *_reliability(policy, gating, grade.plan.count, grade.plan.k),
    ]
    return GateVerdict(
        passed=grade.passed and not reasons,
        rfc_passed=grade.passed,
        reasons=tuple(reasons),
        failed_tasks=_failed(grade),
        quarantined=tuple(t.task_id for t in grade.tasks if t.task_id in held),
        expired=tuple(t.task_id for t in grade.tasks if t.task_id in listed - held),
    )


def _has_conditions(policy: GatePolicy, grade: SuiteGrade) -> bool:
    thresholds = grade.plan.suite.thresholds
    capped = thresholds is not None and thresholds.max_cost_usd is not None
    return bool(
        policy.require_all_tasks
        or policy.groups
        or policy.reliability
        or (capped and policy.unknown_cost == "fail")
    )


def _failed(grade: SuiteGrade) -> tuple[str, ...]:
    return tuple(t.task_id for t in grade.tasks if not t.passed)


def named(ids: Sequence[str]) -> str:
    """The first :data:`NAMED` ids, then how many more."""
    shown = ", ".join(ids[:NAMED])
    return shown + (f" and {len(ids) - NAMED} more" if len(ids) > NAMED else "")


def _infrastructure(grade: SuiteGrade) -> list[Reason]:
    """A run whose trials could not reach what they needed did not complete: whatever its
    scores, it proves nothing about the agent, so its gate stays shut (no policy opens it)."""
    failed = sum(t.infrastructure for t in grade.tasks)
    if not failed:
        return []
    return [
        Reason(
            "infrastructure",
            f"{failed} trial(s) could not reach their model endpoint, MCP server or judge:"
            " the run did not complete, whatever its scores",
        )
    ]


def _user_simulator(grade: SuiteGrade) -> list[Reason]:
    """A run whose simulated users failed measured its simulator, not its agent: its gate
    stays shut, and the count says where to look."""
    failed = sum(t.user_simulator for t in grade.tasks)
    if not failed:
        return []
    return [
        Reason(
            "user-simulator-errors",
            f"{failed} conversation(s) ended because the simulated user failed, not the"
            " agent: the run did not complete, whatever its scores",
        )
    ]


def _unknown_cost(grade: SuiteGrade, policy: GatePolicy) -> list[Reason]:
    thresholds = grade.plan.suite.thresholds
    if thresholds is None or thresholds.max_cost_usd is None or policy.unknown_cost == "zero":
        return []
    unknown = sum(t.cost_unknown for t in grade.tasks)
    if not unknown:
        return []
    return [
        Reason(
            "cost-unknown",
            f"maxCostUsd is set but {unknown} trial(s) reported no cost: an unknown cost does"
            " not pass (unknownCost: zero counts it as 0)",
        )
    ]


def _every_task(policy: GatePolicy, tasks: tuple[TaskGrade, ...]) -> list[Reason]:
    failed = [t.task_id for t in tasks if not t.passed]
    if not policy.require_all_tasks or not failed:
        return []
    return [
        Reason(
            "policy-require-all-tasks",
            f"requireAllTasks: {len(failed)} task(s) did not pass: {named(failed)}",
        )
    ]


def _group(group: GateGroup, tasks: tuple[TaskGrade, ...], suite: Suite) -> list[Reason]:
    tagged = frozenset(task.task_id for task in suite.tasks if group.tag in task.tags)
    members = [t for t in tasks if t.task_id in tagged]
    if not members:
        return []  # every task of the group is quarantined: nothing of it gates
    reasons: list[Reason] = []
    if group.pass_score is not None:
        mean = sum((t.exact_gated for t in members), Fraction(0)) / len(members)
        if mean < Fraction(str(group.pass_score)):
            reasons.append(
                Reason(
                    "policy-group-below-bar",
                    f"group {group.tag}: gated score {float(mean):g} is below its passScore"
                    f" {group.pass_score:g}",
                )
            )
    failed = [t.task_id for t in members if not t.passed]
    if group.require_all and failed:
        reasons.append(
            Reason(
                "policy-group-require-all",
                f"group {group.tag}: {len(failed)} task(s) did not pass: {named(failed)}",
            )
        )
    return reasons


def _reliability(
    policy: GatePolicy, tasks: tuple[TaskGrade, ...], count: int, k: int
) -> list[Reason]:
    floor = policy.reliability
    if floor is None:
        return []
    reasons: list[Reason] = []
    if floor.pass_hat_k is not None:
        bar = Fraction(str(floor.pass_hat_k))
        low = [t for t in tasks if pass_hat_k(t.passed_trials, count, k) < bar]
        if low:
            reasons.append(
                Reason(
                    "policy-pass-hat-k",
                    f"passHatK below {floor.pass_hat_k:g} (k={k}) on {len(low)} task(s):"
                    f" {named([t.task_id for t in low])}",
                )
            )
    if floor.lower_bound is not None:
        reasons.extend(_bounded(floor.lower_bound, tasks, count))
    return reasons


def _bounded(bound: LowerBound, tasks: tuple[TaskGrade, ...], count: int) -> list[Reason]:
    best = pass_rate_bound(count, count, bound)
    what = f"{bound.method} {bound.confidence:g} lower bound of the pass rate"
    if best < bound.at_least:
        return [
            Reason(
                "policy-too-few-trials",
                f"with {count} trial(s) a task's {what} is at most {best:.4g}, below"
                f" {bound.at_least:g}: too few trials to decide, which is not passed",
            )
        ]
    low = [
        t.task_id for t in tasks if pass_rate_bound(t.passed_trials, count, bound) < bound.at_least
    ]
    if not low:
        return []
    return [
        Reason(
            "policy-lower-bound",
            f"{what} below {bound.at_least:g} on {len(low)} task(s): {named(low)}",
        )
    ]


def pass_hat_k(passed: int, count: int, k: int) -> Fraction:
    """The exact chance that k trials drawn without replacement all passed."""
    return Fraction(math.comb(passed, k), math.comb(count, k))


def pass_rate_bound(passed: int, count: int, bound: LowerBound) -> float:
    """The one-sided lower confidence bound of ``passed / count`` (0 with no trials)."""
    if count == 0 or passed == 0:
        return 0.0
    if bound.method == "wilson":
        return _wilson(passed, count, bound.confidence)
    return _clopper_pearson(passed, count, bound.confidence)


def _wilson(passed: int, count: int, confidence: float) -> float:
    z = NormalDist().inv_cdf(confidence)
    p, n = passed / count, count
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


def _clopper_pearson(passed: int, count: int, confidence: float) -> float:
    """The p at which seeing ``passed`` or more of ``count`` has chance 1 - confidence."""
    alpha = 1 - confidence
    low, high = 0.0, passed / count
    for _ in range(60):  # bisection: 2**-60 of the interval, bounded work
        mid = (low + high) / 2
        if _upper_tail(passed, count, mid) < alpha:
            low = mid
        else:
            high = mid
    return low


def _upper_tail(passed: int, count: int, p: float) -> float:
    """P(X ≥ passed) for X ~ Binomial(count, p), summed in log space (no overflow)."""
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(count + 1)
    return math.fsum(
        math.exp(
            log_n
            - math.lgamma(i + 1)
            - math.lgamma(count - i + 1)
            + i * log_p
            + (count - i) * log_q
        )
        for i in range(passed, count + 1)
    )
