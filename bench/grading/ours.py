"""Our core on the corpus: the adapter to trial records, and the check of every verdict."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.grading.corpus import Corpus
from bench.grading.counts import ClassTally
from bench.grading.verdicts import (
    DEFECTS,
    PASS_RULES,
    SuiteExpectation,
    TaskExpectation,
    expected_outcome,
    expected_suite,
    expected_task,
)
from openwop_eval import ToolCall, TrialRecord, parse_suite, plan_suite
from openwop_eval.core import GradingPlan, SuiteGrade, TaskGrade, check_trajectory

TOLERANCE = 1e-12


def records(corpus: Corpus) -> list[TrialRecord]:
    return [
        TrialRecord(
            task_id=task.task_id,
            index=trial.index,
            output=trial.output,
            tool_calls=tuple(ToolCall(c.tool, c.args, c.missed) for c in trial.calls),
            error=trial.error,
        )
        for task in corpus.tasks
        for trial in task.trials
    ]


def trajectory_inputs(corpus: Corpus, plan: GradingPlan) -> list[tuple[Any, tuple[ToolCall, ...]]]:
    """(compiled trajectory, calls) per trial: the matcher alone, like a peer's evaluator."""
    specs = {t.task_id: t.trajectory for t in plan.tasks}
    return [(specs[r.task_id], r.tool_calls) for r in records(corpus)]


def match_only(inputs: list[tuple[Any, tuple[ToolCall, ...]]]) -> list[bool]:
    return [check_trajectory(spec, calls).matched for spec, calls in inputs]


def plans(corpus: Corpus) -> dict[str, GradingPlan]:
    """One compiled plan per pass rule; the suites differ only in ``trials.passRule``."""
    return {rule: plan_suite(parse_suite(corpus.suite(rule)).suite) for rule in PASS_RULES}


def expectations(corpus: Corpus) -> tuple[list[TaskExpectation], SuiteExpectation]:
    k = corpus.k if corpus.k is not None else corpus.trials_per_task
    tasks = [
        expected_task(
            [t.expected_pass for t in task.trials],
            [t.expected_score for t in task.trials],
            corpus.pass_score,
            k,
        )
        for task in corpus.tasks
    ]
    return tasks, expected_suite(tasks, corpus.pass_score)


@dataclass
class RuleCheck:
    """Every disagreement between our grade under one pass rule and the expectation."""

    rule: str
    classes: dict[str, ClassTally] = field(default_factory=dict)
    trial_mismatches: list[str] = field(default_factory=list)
    task_mismatches: list[str] = field(default_factory=list)
    suite_mismatches: list[str] = field(default_factory=list)
    tasks_expected_pass: int = 0
    tasks_passed: int = 0
    task_leaks: int = 0
    task_false_failures: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def leaks(self) -> int:
        return sum(t.leaks for t in self.classes.values())

    @property
    def clean(self) -> bool:
        return not (
            self.leaks or self.trial_mismatches or self.task_mismatches or self.suite_mismatches
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "classes": {name: vars(t) for name, t in self.classes.items()},
            "trialMismatches": self.trial_mismatches,
            "taskMismatches": self.task_mismatches,
            "suiteMismatches": self.suite_mismatches,
            "tasksExpectedPass": self.tasks_expected_pass,
            "tasksPassed": self.tasks_passed,
            "taskLeaks": self.task_leaks,
            "taskFalseFailures": self.task_false_failures,
            "outcomes": dict(self.outcomes),
        }


def check(
    corpus: Corpus,
    rule: str,
    result: SuiteGrade,
    tasks: list[TaskExpectation],
    suite: SuiteExpectation,
) -> RuleCheck:
    out = RuleCheck(rule, {d: ClassTally() for d in DEFECTS})
    for task, graded, expected in zip(corpus.tasks, result.tasks, tasks, strict=True):
        if graded.task_id != task.task_id:
            out.task_mismatches.append(f"{task.task_id}: graded as {graded.task_id}")
            continue
        for trial, got in zip(task.trials, graded.trials, strict=True):
            out.classes[trial.defect].add(trial.expected_pass, got.passed)
            out.outcomes[got.outcome] += 1
            want = (
                trial.expected_pass,
                trial.expected_score,
                float(trial.expected_pass),
                expected_outcome(trial.defect, trial.expected_pass),
            )
            have = (got.passed, got.score, got.gating, got.outcome)
            if want != have:
                out.trial_mismatches.append(
                    f"{task.task_id}#{trial.index} {trial.defect} ({task.order}, "
                    f"args {task.args_match}): expected passed/score/gating/outcome {want},"
                    f" got {have}"
                )
        _check_task(out, rule, graded, expected)
    _check_suite(out, result, suite)
    return out


def _check_task(out: RuleCheck, rule: str, graded: TaskGrade, expected: TaskExpectation) -> None:
    want = expected.passed[rule]
    out.tasks_expected_pass += want
    out.tasks_passed += graded.passed
    out.task_leaks += graded.passed and not want
    out.task_false_failures += want and not graded.passed
    figures = {
        "passed": (graded.passed, want),
        "passedTrials": (graded.passed_trials, expected.passes),
        "score": (graded.score, expected.mean_score),
        "gatedScore": (graded.gated_score, expected.gated_score),
        "passAtK": (graded.pass_at_k, expected.pass_at_k),
        "passHatK": (graded.pass_hat_k, expected.pass_hat_k),
    }
    for name, (got, ref) in figures.items():
        if abs(float(got) - float(ref)) > TOLERANCE:
            out.task_mismatches.append(f"{graded.task_id} ({rule}): {name} {got} != {ref}")


def _check_suite(out: RuleCheck, result: SuiteGrade, suite: SuiteExpectation) -> None:
    figures = {
        "aggregateScore": (result.aggregate_score, suite.aggregate),
        "gatedAggregateScore": (result.gated_aggregate_score, suite.gated_aggregate),
        "passed": (result.passed, suite.passed),
    }
    for name, (got, ref) in figures.items():
        if abs(float(got) - float(ref)) > TOLERANCE:
            out.suite_mismatches.append(f"suite ({out.rule}): {name} {got} != {ref}")
