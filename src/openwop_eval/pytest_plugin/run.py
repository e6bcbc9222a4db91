"""One suite's run for the pytest plugin: its wiring, the run itself (once), its output files
and the texts its tests report.

Nothing here imports pytest; :mod:`openwop_eval.pytest_plugin` turns it into tests. The run
goes through the library's one run service, and the texts come from the renderers the command
line prints with (:mod:`openwop_eval.reports.terminal`), so a test fails with exactly the reasons
``openwop-eval run`` prints.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from rich.console import Console

from ..agents import Agent, absolute_spec, resolve_agent
from ..agents.python import PythonAgent
from ..core import Problem, SuiteError
from ..core.rubric import Judge
from ..files.documents import LineMap, read_document
from ..files.suites import LoadedSuite, parse_suite
from ..judges import resolve_judge
from ..reports.model import Report, TaskReport, report_text, result_report
from ..reports.terminal import print_problems, print_run_table
from ..reports.text import reason_text, verdict_text
from ..runner import RunError, RunOptions, RunResult, RunSpec, SpecError, run_suite_async, validate
from ..store import Store

SUITE_ID = "{suiteId}"
"""Replaced, in an output file name, by the suite's id: one file per suite of a session."""


class RunIncompleteError(Exception):
    """The run could not complete; the message is what every test of the suite reports."""


@dataclass(frozen=True)
class Outputs:
    """The files a run writes, as absolute path templates (``{suiteId}`` is filled in)."""

    events: str | None = None
    summary: str | None = None
    report: str | None = None

    def paths(self, suite_id: str) -> list[Path]:
        return [p for t in (self.events, self.summary, self.report) if (p := _fill(t, suite_id))]


def _fill(template: str | None, suite_id: str) -> Path | None:
    return Path(template.replace(SUITE_ID, suite_id)) if template else None


@dataclass(frozen=True)
class RunSettings:
    """What every suite of a session runs with."""

    options: RunOptions
    store_url: str | None = None
    outputs: Outputs = field(default_factory=Outputs)


def read_suite(path: Path) -> tuple[LoadedSuite, LineMap]:
    """The suite and the lines of its values; :class:`SuiteError` lists every problem."""
    doc, lines, problems = read_document(path)
    if problems:
        raise SuiteError(problems, str(path))
    return parse_suite(doc, str(path), lines), lines


@dataclass(eq=False)
class SuiteRun:
    """A suite ready to run, and — once it has run — its result (or why it has none)."""

    loaded: LoadedSuite
    agent: Agent
    agent_spec: str
    judge: Judge | None
    settings: RunSettings
    owns_judge: bool = False
    _result: RunResult | None = field(default=None, init=False)
    _failure: str | None = field(default=None, init=False)
    _report: Report | None = field(default=None, init=False)
    _tasks: dict[str, TaskReport] | None = field(default=None, init=False)

    @property
    def suite_id(self) -> str:
        return self.loaded.suite.suite_id

    @property
    def title(self) -> str:
        return f"{self.suite_id}@{self.loaded.suite.version}"

    def result(self) -> RunResult:
        """Run the suite the first time it is asked for; every later call reads that run."""
        if self._result is None and self._failure is None:
            try:
                self._result = asyncio.run(self._run())
                self._write_outputs()
            except RunError as exc:  # its message is written for people
                self._failure = f"the run could not complete: {exc}"
            except Exception as exc:  # the store, a judge endpoint refusing, a bug
                # The first line names the cause; a database error's SQL and parameters
                # (tool arguments, fixture responses) stay out of the report, as in the CLI.
                lines = str(exc).splitlines()
                cause = f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"
                self._failure = f"the run could not complete: {cause}"
        if self._failure is not None:
            raise RunIncompleteError(self._failure)
        assert self._result is not None
        return self._result

    def report(self) -> Report:
        """The run's report, built once: what its output files and its tests' texts read
        (with every trial when it writes a report file, else per task)."""
        if self._report is None:
            trials = self.settings.options.keep_trials
            self._report = result_report(self.result(), trials=trials)
        return self._report

    def task(self, task_id: str) -> TaskReport:
        """A task of the run's report: each of the suite's items asks for its own, so the
        index is built once (a scan per item was quadratic in the tasks)."""
        if self._tasks is None:
            self._tasks = {task.task_id: task for task in self.report().tasks}
        return self._tasks[task_id]

    def close(self) -> None:
        """Release the judge of a suite that never ran (a run closes what it used)."""
        if self.owns_judge and self._result is None and self._failure is None:
            aclose = getattr(self.judge, "aclose", None)
            if aclose is not None:
                asyncio.run(aclose())

    async def _run(self) -> RunResult:
        store = Store(self.settings.store_url)
        try:
            with ExitStack() as stack:
                events = _fill(self.settings.outputs.events, self.suite_id)
                sink = _open(stack, events) if events else None
                return await run_suite_async(
                    self.loaded,
                    self.agent,
                    store=store,
                    options=self.settings.options,
                    judge=self.judge,
                    events=sink,
                    agent_spec=self.agent_spec,
                )
        finally:
            store.close()
            aclose = getattr(self.judge, "aclose", None) if self.owns_judge else None
            if aclose is not None:
                await aclose()

    def _write_outputs(self) -> None:
        # The same bytes as ``openwop-eval run --out`` and ``--report`` write.
        summary = _fill(self.settings.outputs.summary, self.suite_id)
        if summary:
            _write(summary, json.dumps(self.report().summary, indent=2) + "\n")
        report = _fill(self.settings.outputs.report, self.suite_id)
        if report:
            _write(report, report_text(self.report()))


def wire(
    loaded: LoadedSuite,
    agent: object,
    agent_base: Path,
    judge: object,
    judge_base: Path,
    settings: RunSettings,
) -> SuiteRun:
    """The run of ``loaded``, checked as a run's spec is: :class:`RunError` when it cannot
    run (a rubric task and no judge), the agent's and judge's spec errors when they do not
    resolve. Relative paths in a specification start from its ``*_base``."""
    resolved, spec = _agent(agent, agent_base, settings.options.concurrency)
    owned = isinstance(judge, str)
    chosen = (
        resolve_judge(absolute_spec(judge, judge_base))
        if isinstance(judge, str)
        else cast("Judge | None", judge)
    )
    problems = validate(RunSpec(loaded, resolved, spec, settings.options, judge=chosen))
    if problems:
        raise SpecError(problems)
    return SuiteRun(loaded, resolved, spec, chosen, settings, owns_judge=owned)


def _agent(agent: object, base: Path, threads: int) -> tuple[Agent, str]:
    """A specification string, an :class:`Agent` object, or a Python callable."""
    if isinstance(agent, str):
        spec = absolute_spec(agent, base)
        return resolve_agent(spec, threads=threads), spec
    if hasattr(agent, "run") and hasattr(agent, "agent_id"):
        return cast(Agent, agent), f"python-object:{type(agent).__name__}"
    if callable(agent):
        name = f"{agent.__module__}:{getattr(agent, '__qualname__', type(agent).__name__)}"
        return PythonAgent(agent, name, threads), name
    raise RunError(f"{agent!r} is not an agent: give a callable, an Agent or a specification")


# --- texts ------------------------------------------------------------------------------


def problems_text(source: str, problems: list[Problem]) -> str:
    """The problems as ``openwop-eval validate`` prints them, one a line."""
    return _render(lambda console: print_problems(console, source, problems))


def gate_text(result: RunResult, report: Report) -> str:
    """The suite's reasons, then the run table ``openwop-eval run`` prints."""
    lines = [reason_text(report.reasons) if report.reasons else verdict_text(report)]
    if result.budget_exhausted:
        lines.append("maxCostUsd was exceeded: trials after that point did not run")
    lines.append(_render(lambda console: print_run_table(console, report)))
    return "\n".join(lines)


def _render(draw: Callable[[Console], None]) -> str:
    buffer = io.StringIO()
    draw(Console(file=buffer, width=160, color_system=None, highlight=False, soft_wrap=True))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def _open(stack: ExitStack, path: Path) -> io.TextIOWrapper:
    path.parent.mkdir(parents=True, exist_ok=True)
    return stack.enter_context(open(path, "w", encoding="utf-8"))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
