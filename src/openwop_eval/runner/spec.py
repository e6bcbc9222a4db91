"""A run's spec: everything that decides a run, typed, and the one check of it.

A :class:`RunSpec` is what a shell asks for: the suite, the agent, what answers its tools,
the terms (modes in effect, a regression baseline, an adversarial severity bar and
detectors), and the options. :func:`validate` checks it against a store and returns every
problem, each located by the member of the spec it is about (``$.terms.fail_on_severity``),
the way suite validation locates a suite's; a shell names that member its own way
(``--fail-on-severity``, ``baselineRunId``) with :func:`describe`. :func:`settle` is the same
check that also chooses the baseline asked for: the spec a run starts from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final, Protocol, TypeAlias

from ..agents.base import Agent
from ..core import names as n
from ..core.plan import Baseline, RunTerms
from ..core.problems import Loc, Problem
from ..core.records import Recording
from ..core.rubric import Judge
from ..core.safety import SafetyPolicy, finding_problem
from ..core.suite import Suite
from ..files.suites import LoadedSuite
from ..log.shards import Shard
from ..store import Store
from ..store.within import Within
from ..users import UserPlayers, UserSimulatorError
from ..users.simulator import model_for
from .baseline import UNUSABLE, BaselineError, baseline_run, baseline_summary, newest_baseline

LiveTool = Callable[[dict[str, Any]], Any]
"""A live tool: called with a tool call's arguments, returns its result."""


@dataclass(frozen=True)
class RunOptions:
    concurrency: int = 8
    timeout_s: float | None = 300.0
    tenant: str = "local"
    live_shadow: bool = False
    """Ignore fixtures and call live tools (only for suites that declare ``live-shadow``)."""
    shard: str | None = None
    """``I/N``: run only this shard's (task, trial) pairs (see :mod:`openwop_eval.log.shards`);
    the trials of the other shards count as not run until the shards are merged."""
    fail_fast: bool = False
    """Stop once no outcome of the trials still to come can make the run pass (exactly: the
    RFC rule and the gate policy); the trials not played count as not run."""
    keep_trials: bool = False
    """Keep each trial's grade in the result, for its reports to read rather than grade the
    log again (memory O(trials), as a report's; by default O(tasks)). Not stored."""

    @property
    def slice(self) -> Shard | None:
        return Shard.parse(self.shard) if self.shard is not None else None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "keep_trials"}


class TrialPlayer(Protocol):
    """Plays trials somewhere else than on the event loop (``runner.run.TrialExecutor``)."""

    async def run(self, setup: Any) -> Any: ...


@dataclass(frozen=True)
class StoredBaseline:
    """A run of the store, by id: usable when it is a completed run of the same suite and
    version in the run's tenant."""

    run_id: str | None
    """None: a reference that names no run (a malformed id), refused as any unusable one."""


@dataclass(frozen=True)
class SummaryBaseline:
    """A finished run's summary read from a file: usable when it is of the same suite."""

    summary: Any
    run_id: str | None
    source: str


@dataclass(frozen=True)
class NewestBaseline:
    """The newest usable run of the store, when regression is in effect (none when there is
    none yet); nothing otherwise. What a shell asks when no baseline is named."""


NEWEST: Final = NewestBaseline()

BaselineChoice: TypeAlias = Baseline | StoredBaseline | SummaryBaseline | NewestBaseline
"""A baseline as asked: already chosen, a run of the store, a summary, or the newest."""


@dataclass(frozen=True)
class RunSpec:
    """What a run is: the suite, the agent, what answers its tools, its terms and options.

    A new run names its suite and agent; a resumed one (``resume``) keeps the suite, fixture
    source, terms and shard it was started with, and may name the agent (else the one it
    was started with) and the options (else its own) afresh."""

    suite: LoadedSuite | None
    agent: Agent | None
    agent_spec: str = ""
    """Recorded, so the run can be resumed without naming the agent again."""
    options: RunOptions | None = None
    """None: the defaults for a new run, the stored ones for a resumed run."""
    recording: Recording | None = None
    """Responses recorded in earlier runs, per task: they answer those tasks' tool calls."""
    judge: Judge | None = None
    live_tools: Mapping[str, LiveTool] | None = None
    tool_listing: Mapping[str, Mapping[str, Any]] | None = None
    """What the recorded runs' MCP servers listed of their tools (``fixtures.listing_from``)."""
    terms: RunTerms = field(default_factory=RunTerms)
    """The modes in effect (default: the suite's), the severity bar, a chosen baseline."""
    baseline: BaselineChoice | None = None
    """A regression run's baseline as asked, chosen by :func:`settle`."""
    safety: SafetyPolicy | None = None
    """What an adversarial run's detectors look for (default: the built-in policy)."""
    executor: TrialPlayer | None = None
    """Where the trials play (a Ray executor); None: in process. A resume chooses afresh."""
    resume: str | None = None
    """The id of an unfinished run to go on with."""
    fail_fast: bool = False
    """Stop once no outcome of the trials still to come can make the run pass (exactly: the
    RFC rule and the gate policy); the trials not played count as not run."""
    keep_trials: bool = False
    """Keep each trial's grade in the result (see :attr:`RunOptions.keep_trials`), whether
    or not the options are given."""
    owner: dict[str, Any] | None = None
    """The ``run.started`` owner (a host's caller)."""
    metadata: Mapping[str, Any] | None = None
    """Recorded with the run's options (a host's ``evalSuiteRef``, ``fixtureRuns``)."""
    agent_version: str | None = None
    """The agent's version (a host's): stored with the run, echoed in ``eval.started``."""
    on_create: Callable[[str], Within | None] | None = None
    """For the new run's id, writes made in the transaction that creates it."""
    users: UserPlayers | None = None
    """Who plays conversation tasks' users (None: the suite's users, simulated ones on the
    environment's endpoint; see ``users/simulator.py``)."""

    def run_options(self, stored: RunOptions | None = None) -> RunOptions:
        """The options the run plays with: these, else ``stored`` (a resumed run's own),
        else the defaults; ``keep_trials`` when either asks for it."""
        chosen = self.options or stored or RunOptions()
        return replace(chosen, keep_trials=chosen.keep_trials or self.keep_trials)

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes in effect (none known before a resumed run's suite is read)."""
        return self.terms.modes_of(self.suite.suite) if self.suite is not None else ()


# --- the one check ----------------------------------------------------------------------


def validate(spec: RunSpec, store: Store | None = None) -> list[Problem]:
    """Every problem of ``spec``, located by the member it is about; none: it can run."""
    return settle(spec, store)[1]


def settle(spec: RunSpec, store: Store | None = None) -> tuple[RunSpec, list[Problem]]:
    """:func:`validate`, and the spec with the baseline asked for chosen (in its terms)."""
    if spec.resume is not None:
        return spec, _resumed(spec)
    if spec.suite is None or spec.agent is None:
        missing = "suite" if spec.suite is None else "agent"
        return spec, [Problem((missing,), f"a new run needs a {missing} (or a run to resume)")]
    suite = spec.suite.suite
    problems = [*_runnable(spec, suite), *_modes(spec, suite)]
    baseline = _baseline(spec, suite, store, problems)
    problems += _detectors(spec)
    settled = replace(spec, terms=replace(spec.terms, baseline=baseline), baseline=None)
    return settled, problems


def _resumed(spec: RunSpec) -> list[Problem]:
    problems = []
    if spec.suite is not None:
        problems.append(Problem(("suite",), "a resumed run keeps the suite it was started with"))
    asked = spec.baseline not in (None, NEWEST)
    if asked or spec.terms != RunTerms() or spec.safety is not None:
        message = "a resumed run keeps the baseline and detectors it was started with"
        problems.append(Problem(("terms",), message))
    if spec.recording is not None:
        message = "a resumed run serves the fixtures it was started with"
        problems.append(Problem(("recording",), message))
    return problems + _options(spec.run_options())


def _runnable(spec: RunSpec, suite: Suite) -> list[Problem]:
    """What a run needs beyond a valid suite: a judge for rubric tasks, a mode for
    live-shadow, sane options."""
    problems = []
    rubric_tasks = [t.task_id for t in suite.tasks if t.expected.kind == "rubric"]
    if rubric_tasks and spec.judge is None:
        message = (
            f"tasks {', '.join(rubric_tasks)} are rubric tasks; choose a judge"
            " (scripted:FILE or openai:MODEL)"
        )
        problems.append(Problem(("judge",), message))
    if spec.users is None or spec.users.simulates:
        problems += _simulated_users(suite)
    options = spec.run_options()
    if options.live_shadow and "live-shadow" not in suite.modes:
        message = "live-shadow runs need a suite whose modes include live-shadow"
        problems.append(Problem(("options", "live_shadow"), message))
    return problems + _options(options)


def _simulated_users(suite: Suite) -> list[Problem]:
    """A simulated user with no model anywhere would fail every trial it plays: say so now."""
    problems = []
    for i, task in enumerate(suite.tasks):
        user = task.conversation.user if task.conversation is not None else None
        if user is None or user.simulator is None:
            continue
        try:
            model_for(user.simulator)
        except UserSimulatorError as exc:
            where = ("tasks", i, n.EXT, "conversation", "user", "simulator", "model")
            problems.append(Problem(where, f"task {task.task_id}: {exc}"))
    return problems


def _options(options: RunOptions) -> list[Problem]:
    problems = []
    if options.concurrency < 1:
        problems.append(Problem(("options", "concurrency"), "concurrency must be at least 1"))
    try:
        options.slice  # noqa: B018 (parsed to be checked)
    except ValueError as exc:
        problems.append(Problem(("options", "shard"), str(exc)))
    return problems


def _modes(spec: RunSpec, suite: Suite) -> list[Problem]:
    modes, loc = spec.terms.modes, ("terms", "modes")
    if modes is None:
        return []
    if not modes:
        return [Problem(loc, "must name at least one mode")]
    bad = [m for m in dict.fromkeys(modes) if m not in suite.modes]
    return [Problem(loc, f"modes {bad} are not declared by the suite")] if bad else []


def _needs(spec: RunSpec, mode: str) -> str:
    """Why a term is refused: ``mode`` is not in effect (the suite's, or those given)."""
    if spec.terms.modes is None:
        return f"needs a suite whose modes include {mode}"
    return f'needs "{mode}" among the modes in effect'


def _baseline(
    spec: RunSpec, suite: Suite, store: Store | None, problems: list[Problem]
) -> Baseline | None:
    """The baseline asked for, chosen; a problem, and None, when it cannot be."""
    asked = spec.baseline
    loc: Loc = ("terms", "baseline") if asked is None else ("baseline",)
    if asked is not None and spec.terms.baseline is not None:
        problems.append(Problem(loc, "is given twice: as a choice and in the terms"))
        return None
    if "regression" not in spec.modes:
        if asked not in (None, NEWEST) or spec.terms.baseline is not None:
            problems.append(Problem(loc, _needs(spec, "regression")))
        return None
    tenant = spec.run_options().tenant
    try:
        return _chosen(asked, spec.terms.baseline, suite, store, tenant)
    except BaselineError as exc:
        problems.append(Problem(loc, str(exc)))
        return None


def _chosen(
    asked: BaselineChoice | None,
    given: Baseline | None,
    suite: Suite,
    store: Store | None,
    tenant: str,
) -> Baseline | None:
    if asked is None or isinstance(asked, Baseline):
        return asked or given
    if isinstance(asked, SummaryBaseline):
        try:
            return baseline_summary(asked.summary, asked.run_id, suite, asked.source)
        except BaselineError:
            raise BaselineError(f"is not a summary of {suite.suite_id}@{suite.version}") from None
    if store is None:
        if isinstance(asked, NewestBaseline):
            return None
        raise BaselineError("names a run, and there is no store to find it in")
    if isinstance(asked, NewestBaseline):
        return newest_baseline(store, suite, tenant)
    try:
        if asked.run_id is None:
            raise BaselineError(UNUSABLE)
        return baseline_run(store, suite, tenant, asked.run_id)
    except BaselineError:
        raise BaselineError(UNUSABLE) from None  # the same whatever the reason


def _detectors(spec: RunSpec) -> list[Problem]:
    problems = []
    adversarial = "adversarial" in spec.modes
    bar, loc = spec.terms.fail_on_severity, ("terms", "fail_on_severity")
    if bar is not None and bar not in n.SEVERITIES:
        problems.append(Problem(loc, f"must be one of {', '.join(n.SEVERITIES)}"))
    elif bar is not None and not adversarial:
        problems.append(Problem(loc, _needs(spec, "adversarial")))
    if spec.safety is None:
        return problems
    if not adversarial:
        problems.append(Problem(("safety",), "need an adversarial suite"))
    for kind, level in spec.safety.severities.items():
        why = finding_problem(kind, level)
        if why is not None:
            problems.append(Problem(("safety", "severities", kind), f"{kind}={level}: {why}"))
    return problems


# --- saying a problem -------------------------------------------------------------------

Names: TypeAlias = Mapping[Loc, str]
"""What a shell calls the members of a spec, by location: ``--baseline``, ``baselineRunId``.
A problem reads ``NAME why``, named by its location's longest named prefix; a member
without a name, or named ``""``, reads ``why``."""

NAMES: Final[Names] = {
    ("baseline",): "a baseline",
    ("terms",): "",
    ("terms", "baseline"): "a baseline",
    ("terms", "fail_on_severity"): "failing on a finding's severity",
    ("terms", "modes"): "",
    ("safety",): "the detectors of a safety policy",
    ("safety", "severities"): "severities:",
    ("options", "shard"): "shard:",
    ("options", "concurrency"): "",
}
"""The library's names, and every shell's for a member it does not name itself."""


def describe(problem: Problem, names: Names = NAMES) -> str:
    """``problem`` as a shell says it, naming the member as ``names`` do."""
    name = ""
    for end in range(len(problem.loc), 0, -1):
        loc = problem.loc[:end]
        if loc in names or loc in NAMES:
            name = names.get(loc, NAMES.get(loc, ""))
            break
    return f"{name} {problem.message}" if name else problem.message
