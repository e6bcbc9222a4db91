"""Counting trial verdicts against the expected ones, per defect class and per task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.grading.corpus import Corpus
from bench.grading.verdicts import DEFECTS, PASS_RULES, task_passes


@dataclass
class ClassTally:
    """How one defect class fared: trials, expected failures, leaks, false failures."""

    trials: int = 0
    expected_fail: int = 0
    leaks: int = 0
    """Trials expected to fail that passed."""
    false_failures: int = 0
    """Trials expected to pass that failed."""

    def add(self, expected: bool, got: bool) -> None:
        self.trials += 1
        self.expected_fail += not expected
        self.leaks += (not expected) and got
        self.false_failures += expected and not got


@dataclass
class TaskTally:
    """Task ``passed`` under one pass rule, derived from the trial verdicts, vs expected."""

    expected_pass: int = 0
    passed: int = 0
    leaks: int = 0
    false_failures: int = 0


@dataclass
class VerdictTally:
    classes: dict[str, ClassTally] = field(default_factory=dict)
    tasks: dict[str, TaskTally] = field(default_factory=dict)
    passes: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "passes": self.passes,
            "classes": {k: vars(v) for k, v in self.classes.items()},
            "tasks": {k: vars(v) for k, v in self.tasks.items()},
        }


def tally(corpus: Corpus, verdicts: Sequence[bool]) -> VerdictTally:
    """Score one trial verdict per corpus trial (in corpus order) against the expectation.

    Task verdicts apply each pass rule to these trial verdicts with the corpus's
    passScore, so a system without pass rules is judged as if it had ours.
    """
    if len(verdicts) != corpus.trial_count:
        raise ValueError(f"{len(verdicts)} verdicts for {corpus.trial_count} trials")
    out = VerdictTally({d: ClassTally() for d in DEFECTS}, {r: TaskTally() for r in PASS_RULES})
    n = corpus.trials_per_task
    at = 0
    for task in corpus.tasks:
        got = verdicts[at : at + n]
        at += n
        for trial, passed in zip(task.trials, got, strict=True):
            out.classes[trial.defect].add(trial.expected_pass, passed)
        c, want_c = sum(got), task.expected_passes
        out.passes += c
        for rule, t in out.tasks.items():
            want = task_passes(rule, want_c, n, corpus.pass_score)
            have = task_passes(rule, c, n, corpus.pass_score)
            t.expected_pass += want
            t.passed += have
            t.leaks += have and not want
            t.false_failures += want and not have
    return out
