"""An opt-in pytest plugin: every task of a suite is a test, and the suite gate is one more.

Enable it with ``pytest -p openwop_eval.pytest_plugin`` or ``pytest_plugins =
["openwop_eval.pytest_plugin"]`` in the root ``conftest.py``; it registers no entry point,
so it never loads for other pytest users. Suites come from files — those matching the
``openwop_eval_suites`` patterns (or ``--openwop-suite``), and suite files named on the
command line — or from :func:`suite_tests` in a test module. See ``docs/pytest.md``.

A suite runs once per session, through the run service, when its first test is set up;
each test then reports its part of that run. pytest's exit status is the gate.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..agents import AgentSpecError
from ..core import SuiteError
from ..judges import JudgeSpecError
from ..reports.text import not_gating, task_text
from ..runner import RunError, RunOptions
from ..store import default_url
from .run import (
    Outputs,
    RunIncompleteError,
    RunSettings,
    SuiteRun,
    gate_text,
    problems_text,
    read_suite,
    wire,
)

__all__ = ["GATE", "SuiteTests", "suite_tests"]

GATE = "(suite gate)"
"""The name of a suite's gate test; no taskId can take it (taskIds are ``[a-z0-9-]``)."""
MARKER = "openwop_eval"
SUFFIXES = (".yaml", ".yml", ".json")
_ATTRIBUTE = "__openwop_suite_tests__"
_SETTINGS = pytest.StashKey["_Settings"]()

_OPTIONS: dict[str, tuple[str, str]] = {
    "agent": ("AGENT", "the agent: module:function, file.py:function, scripted:PATH, cmd:COMMAND"),
    "judge": ("JUDGE", "the judge of rubric tasks: scripted:PATH or openai:MODEL"),
    "store": ("URL", "the run store (default: the one openwop-eval run uses)"),
    "concurrency": ("N", "trials that may run at once (default 8)"),
    "timeout": ("SECONDS", "seconds a trial may take before it errors (default 300)"),
    "events": ("FILE", "write each suite's event log (JSON lines); {suiteId} is filled in"),
    "summary": ("FILE", "write each suite's EvalSummary (JSON); {suiteId} is filled in"),
    "report": ("FILE", "write each suite's rich JSON report; {suiteId} is filled in"),
}
"""Options given both ways: ``--openwop-NAME`` on the command line, ``openwop_eval_NAME``
in the ini file (the command line wins)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("openwop-eval", "openwop-eval: suites as tests")
    group.addoption(
        "--openwop-suite",
        action="append",
        default=[],
        metavar="GLOB",
        help="collect files matching GLOB as suites (repeatable; adds to openwop_eval_suites)",
    )
    parser.addini(
        "openwop_eval_suites",
        "glob patterns of suite files to collect, e.g. evals/*.yaml",
        type="linelist",
        default=[],
    )
    for name, (metavar, text) in _OPTIONS.items():
        group.addoption(f"--openwop-{name}", dest=f"openwop_{name}", metavar=metavar, help=text)
        parser.addini(f"openwop_eval_{name}", text)


@dataclass(frozen=True)
class _Given:
    """A value and the directory its relative paths start from: the working directory for
    the command line, the ini file's for the ini file (as pytest does), the test module's
    for :func:`suite_tests`."""

    value: object
    base: Path


@dataclass(frozen=True)
class _Settings:
    patterns: tuple[str, ...]
    agent: _Given | None
    judge: _Given | None
    run: RunSettings


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a test of an openwop-eval suite")
    files = {name: _given(config, name) for name in ("events", "summary", "report")}
    store = _given(config, "store")
    options = RunOptions(
        concurrency=int(_number(config, "concurrency", int, 8)),
        timeout_s=_number(config, "timeout", float, 300.0),
        keep_trials=files["report"] is not None,  # the report reads the run's own grades
    )
    outputs = Outputs(**{k: str(g.base / str(g.value)) if g else None for k, g in files.items()})
    config.stash[_SETTINGS] = _Settings(
        patterns=(*config.getini("openwop_eval_suites"), *config.getoption("openwop_suite")),
        agent=_given(config, "agent"),
        judge=_given(config, "judge"),
        run=RunSettings(options, str(store.value) if store else None, outputs),
    )


def _given(config: pytest.Config, name: str) -> _Given | None:
    value = config.getoption(f"openwop_{name}")
    if value:
        return _Given(str(value), config.invocation_params.dir)
    value = config.getini(f"openwop_eval_{name}")
    if value:
        return _Given(str(value), config.inipath.parent if config.inipath else config.rootpath)
    return None


def _number(
    config: pytest.Config, name: str, kind: Callable[[str], float], default: float
) -> float:
    given = _given(config, name)
    if given is None:
        return default
    try:
        value = kind(str(given.value))
    except ValueError:
        value = 0
    if not value > 0:  # also refuses nan
        raise pytest.UsageError(
            f"openwop-eval {name} must be a positive {'whole ' if kind is int else ''}number,"
            f" not {given.value!r}"
        )
    return value


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = config.stash[_SETTINGS]
    agent = settings.agent.value if settings.agent else "(none given)"
    return [f"openwop-eval: agent {agent}, store {settings.run.store_url or default_url()}"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A suite file: named on the command line (like a test module), or matching a pattern."""
    patterns = parent.config.stash[_SETTINGS].patterns
    named = file_path.suffix.lower() in SUFFIXES and parent.session.isinitpath(file_path)
    if named or any(file_path.match(pattern) for pattern in patterns):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> pytest.Collector | None:
    declared = obj.__dict__.get(_ATTRIBUTE) if inspect.isfunction(obj) else None
    if isinstance(declared, SuiteTests):
        return SuiteTestsCollector.from_parent(collector, name=name, declared=declared)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Two suites writing one output file is a usage error before anything runs."""
    runs = {item.run for item in session.items if isinstance(item, _SuiteItem)}
    writers: dict[Path, str] = {}
    for run in sorted(runs, key=lambda r: r.title):
        for path in run.settings.outputs.paths(run.suite_id):
            if path in writers:
                raise pytest.UsageError(
                    f"{path} would be written by {writers[path]} and by {run.title};"
                    " put {suiteId} in the file name"
                )
            writers[path] = run.title


# --- suites in a test module ------------------------------------------------------------


@dataclass(frozen=True)
class SuiteTests:
    """A suite declared in a test module; relative paths start from the module's directory."""

    path: str
    agent: object = None
    judge: object = None


def suite_tests(
    path: str | os.PathLike[str], *, agent: object = None, judge: object = None
) -> Callable[[], None]:
    """The tests of the suite at ``path``: assign the result to a ``test_`` name.

    ``agent`` is a Python callable ``(input, tools) -> output``, an ``Agent``, or a
    specification string; ``judge`` a judge or ``scripted:PATH`` / ``openai:MODEL``. Either
    left out comes from ``--openwop-agent`` / ``--openwop-judge`` or the ini file.
    """
    declared = SuiteTests(os.fspath(path), agent, judge)

    def test_suite() -> None:
        # Collected as a plain test only when the plugin is not enabled: say how to enable it.
        pytest.fail(
            "suite_tests() needs the openwop_eval pytest plugin: run pytest with"
            " -p openwop_eval.pytest_plugin, or add pytest_plugins ="
            ' ["openwop_eval.pytest_plugin"] to the root conftest.py',
            pytrace=False,
        )

    setattr(test_suite, _ATTRIBUTE, declared)
    return test_suite


# --- collectors and items ---------------------------------------------------------------


class SuiteFile(pytest.File):
    """A suite file: one test per task, and the gate."""

    def collect(self) -> Iterable[pytest.Item]:
        settings = self.config.stash[_SETTINGS]
        return _collect(self, self.path, settings.agent, settings.judge, lines=True)


class SuiteTestsCollector(pytest.Collector):
    """A :func:`suite_tests` declaration: the same tests as its suite file would give."""

    def __init__(self, *, declared: SuiteTests, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.declared = declared

    def collect(self) -> Iterable[pytest.Item]:
        settings = self.config.stash[_SETTINGS]
        here, given = self.path.parent, self.declared
        agent = settings.agent if given.agent is None else _Given(given.agent, here)
        judge = settings.judge if given.judge is None else _Given(given.judge, here)
        return _collect(self, here / given.path, agent, judge, lines=False)


def _collect(
    node: pytest.Collector,
    path: Path,
    agent: _Given | None,
    judge: _Given | None,
    lines: bool,
) -> list[pytest.Item]:
    """The suite's items, or a collection error naming every problem (never a traceback)."""
    shown = _shown(node.config, path)
    try:
        loaded, located = read_suite(path)
    except SuiteError as exc:
        raise node.CollectError(problems_text(shown, exc.problems)) from None
    if agent is None:
        raise node.CollectError(
            f"{shown}: no agent to run the suite against; give --openwop-agent AGENT"
            " or set openwop_eval_agent in the ini file"
        )
    judge = judge or _Given(None, path.parent)
    settings = node.config.stash[_SETTINGS].run
    try:
        run = wire(loaded, agent.value, agent.base, judge.value, judge.base, settings)
    except (AgentSpecError, JudgeSpecError, RunError, ValueError, OSError, ImportError) as exc:
        raise node.CollectError(f"{shown}: {exc}") from None
    node.config.add_cleanup(run.close)
    items: list[pytest.Item] = [
        TaskItem.from_parent(
            node,
            name=task.task_id,
            run=run,
            line=located.line_of(("tasks", i)) if lines else None,
        )
        for i, task in enumerate(loaded.suite.tasks)
    ]
    return [*items, GateItem.from_parent(node, name=GATE, run=run, line=None)]


def _shown(config: pytest.Config, path: Path) -> str:
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)


class _SuiteItem(pytest.Item):
    def __init__(self, *, run: SuiteRun, line: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run, self.line = run, line
        self.add_marker(MARKER)

    def setup(self) -> None:
        # The first test of a suite runs it; a run that could not complete is an error of
        # every test of the suite, with the same message.
        try:
            self.run.result()
        except RunIncompleteError as exc:
            failure = str(exc)
        else:
            return
        pytest.fail(failure, pytrace=False)  # outside the except: no chained exception shown

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return (
            self.path,
            None if self.line is None else self.line - 1,
            f"{self.run.title}::{self.name}",
        )


class TaskItem(_SuiteItem):
    """Passes when the task passed: its trials' gated score against passScore, or its
    passRule; fails with each failed trial's first failed constraint when its failure shut
    the gate, and is an expected failure (xfail) when the gate passed without it or the
    task is quarantined, so pytest's exit agrees with the gate."""

    def runtest(self) -> None:
        result = self.run.result()
        task = self.run.task(self.name)
        self.user_properties += [
            ("runId", result.run_id),
            ("score", task.score),
            ("gatedScore", task.gated_score),
        ]
        text = task_text(task, self.run.report().trials.count, result.run_id)
        if not task.passed:
            report = self.run.report()
            if report.gate.gates(task.task_id):
                pytest.fail(text, pytrace=False)
            pytest.xfail(f"{text}\n{not_gating(report, task.task_id)}")
        self.add_report_section("call", "openwop-eval", text)


class GateItem(_SuiteItem):
    """Passes when the gate is open: the suite passed (its gated aggregate against
    passScore, its cost and latency bars) and so did its gate policy; fails with the
    reasons and the run table."""

    def runtest(self) -> None:
        result = self.run.result()
        report = self.run.report()
        self.user_properties += [
            ("runId", result.run_id),
            ("aggregateScore", report.aggregate_score),
            ("gatedAggregateScore", report.gated_aggregate_score),
            ("passScore", report.pass_score),
        ]
        text = gate_text(result, report)
        if not report.passed:
            pytest.fail(text, pytrace=False)
        self.add_report_section("call", "openwop-eval", text)
