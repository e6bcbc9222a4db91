"""A suite compiled for grading: matchers built, bar and trials settled, tasks indexed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

from . import names as n
from .canonical import JSON
from .conversation import TurnSpecs
from .errors import SuiteError
from .gate_policy import GatePolicy, UnknownCost
from .golden import golden_scorer
from .problems import Problem, errors_in
from .safety import Severity
from .stats import at_least, decimal
from .suite import Suite, Task
from .trajectory import TrajectorySpec, compile_trajectory


@dataclass(frozen=True, slots=True)
class CompiledTask:
    task: Task
    trajectory: TrajectorySpec | None
    turns: TurnSpecs = ()
    """A conversation's turn rules, compiled, by turn (empty when it has none)."""
    golden: Callable[[JSON], float] | None = field(init=False, repr=False, compare=False)
    """The golden match, compiled (None for a rubric task)."""
    named_tools: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The tools the task's trajectory names outright (steps, forbidden, ``before`` pairs;
    globs left out), sorted: a tool server lists them, as production offers them all."""

    def __post_init__(self) -> None:
        match = self.task.expected.match
        scorer = golden_scorer(match) if self.task.expected.kind == "golden" and match else None
        object.__setattr__(self, "golden", scorer)
        object.__setattr__(self, "named_tools", _named_tools(self.task))

    def __reduce__(
        self,
    ) -> tuple[type[CompiledTask], tuple[Task, TrajectorySpec | None, TurnSpecs]]:
        return CompiledTask, (self.task, self.trajectory, self.turns)  # the scorer is rebuilt

    @property
    def task_id(self) -> str:
        return self.task.task_id


def _named_tools(task: Task) -> tuple[str, ...]:
    specs = [task.expected.trajectory]
    if task.conversation is not None:
        specs += [rule.trajectory for rule in task.conversation.turns]
    names: set[str] = set()
    for spec in specs:
        if spec is not None:
            names |= {s.tool for s in spec.steps} | set(spec.forbidden)
            names |= {name for pair in spec.before for name in pair}
    return tuple(sorted(name for name in names if not any(c in name for c in "*?[")))


@dataclass(frozen=True, slots=True)
class Baseline:
    """The run a regression run is compared with: its id and ungated ``aggregateScore``."""

    run_id: str
    aggregate_score: float
    diff_ref: str | None = None
    """The run diff the summary names (``GET /runs/{runId}:diff?against=…``), if any."""


@dataclass(frozen=True, slots=True)
class RunTerms:
    """What a run adds to its suite's grading, as its ``eval.started`` records it."""

    modes: tuple[str, ...] | None = None
    """The modes in effect (``evalModes``); None means the suite's own."""
    fail_on_severity: Severity | None = None
    """Adversarial runs: a finding at or above this severity fails its trial and task."""
    baseline: Baseline | None = None
    require_all_tasks: bool = False
    """``--require-all-tasks``: every task must pass, whatever the suite's gate policy says."""
    unknown_cost: UnknownCost | None = None
    """``--unknown-cost``: in place of the suite's ``unknownCost``."""
    day: str | None = None
    """The UTC date (ISO) the run started: quarantines are judged on it, so a resume or an
    audit years later decides the gate as the run did."""

    def modes_of(self, suite: Suite) -> tuple[str, ...]:
        """The modes in effect for a run of ``suite``: these terms' own, else the suite's."""
        return self.modes if self.modes is not None else tuple(suite.modes)

    def policy_of(self, suite: Suite) -> GatePolicy:
        """The gate policy of a run of ``suite``: the suite's, with these terms' additions."""
        declared = suite.extension.gate if suite.extension is not None else None
        policy = declared or GatePolicy()
        changes: dict[str, object] = {}
        if self.require_all_tasks:
            changes["require_all_tasks"] = True
        if self.unknown_cost is not None:
            changes["unknown_cost"] = self.unknown_cost
        return policy.model_copy(update=changes) if changes else policy


MEMO_SCORES: Final = 1024


@dataclass(frozen=True)
class GradingPlan:
    suite: Suite
    tasks: tuple[CompiledTask, ...]
    pass_score: Fraction
    count: int
    pass_rule: str
    k: int
    by_id: dict[str, CompiledTask] = field(repr=False)
    terms: RunTerms = RunTerms()
    _meets: dict[float, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def meets_bar(self, score: float) -> bool:
        """``decimal(score) >= pass_score``, remembered: a run's scores are a few values."""
        known = self._meets.get(score)
        if known is None:
            known = at_least(score, self.pass_score)
            if len(self._meets) < MEMO_SCORES:
                self._meets[score] = known
        return known

    @property
    def modes(self) -> tuple[str, ...]:
        return self.terms.modes_of(self.suite)

    @property
    def adversarial(self) -> bool:
        return "adversarial" in self.modes


def compile_task(task: Task, loc: tuple[str | int, ...]) -> tuple[CompiledTask, list[Problem]]:
    problems: list[Problem] = []
    spec = None
    if task.trajectory is not None:
        spec, problems = compile_trajectory(task.trajectory, (*loc, "expected", n.TRAJECTORY))
    turns: list[TrajectorySpec | None] = []
    conversation = task.conversation
    for i, rule in enumerate(conversation.turns if conversation is not None else ()):
        if rule.trajectory is None:
            turns.append(None)
            continue
        here = (*loc, n.EXT, "conversation", "turns", i, n.TRAJECTORY)
        turn_spec, found = compile_trajectory(rule.trajectory, here)
        turns.append(turn_spec)
        problems.extend(found)
    if not any(s is not None for s in turns):
        turns = []  # no rule of any turn: graded as any task is
    return CompiledTask(task, spec, tuple(turns)), problems


def plan_suite(suite: Suite, terms: RunTerms | None = None) -> GradingPlan:
    """Compile ``suite`` for grading under a run's ``terms``; :class:`SuiteError` if a
    matcher does not compile."""
    problems: list[Problem] = []
    tasks = []
    for i, task in enumerate(suite.tasks):
        compiled, found = compile_task(task, ("tasks", i))
        tasks.append(compiled)
        problems.extend(found)
    if errors_in(problems):
        raise SuiteError(problems)
    trials = suite.trials_or_default
    return GradingPlan(
        suite=suite,
        tasks=tuple(tasks),
        pass_score=decimal(suite.pass_score),
        count=trials.count,
        pass_rule=trials.pass_rule,
        k=trials.effective_k,
        by_id={t.task_id: t for t in tasks},
        terms=terms or RunTerms(),
    )
