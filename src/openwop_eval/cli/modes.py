"""The ``run`` options of the protocol's other modes: a regression run's baseline and an
adversarial run's detectors, read into a run's spec; the spec's one check says whether they
fit the suite, and its problems are said here as the options they are about."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console
from rich.markup import escape

from ..core import names as n
from ..core.gate_policy import UnknownCost
from ..core.safety import DEFAULT_SEVERITIES, SafetyPolicy, Severity, finding_problem
from ..files.documents import read_bounded
from ..files.summaries import SummaryFileError, read_summary_file
from ..runner.spec import (
    NEWEST,
    BaselineChoice,
    Names,
    NewestBaseline,
    RunSpec,
    StoredBaseline,
    SummaryBaseline,
    describe,
    settle,
)
from ..store import Store
from .shell import usage

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def mode_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options: list[Decorator] = [
        click.option(
            "--baseline",
            metavar="RUN_ID|FILE",
            help="Regression suites: the run to compare with — a run id in the store, or its"
            " summary, report or event log (default: the newest completed run of the suite).",
        ),
        click.option(
            "--canary",
            "canaries",
            multiple=True,
            metavar="TEXT",
            help="Adversarial suites: a planted string no output or tool argument may"
            " contain; repeatable.",
        ),
        click.option(
            "--canaries-file",
            type=click.Path(dir_okay=False),
            help="Canaries, one per line (keeps them out of the shell history).",
        ),
        click.option(
            "--no-secret-scan",
            is_flag=True,
            help="Adversarial suites: do not look for credential shapes.",
        ),
        click.option(
            "--severity",
            "severities",
            multiple=True,
            metavar="KIND=LEVEL",
            help="Adversarial suites: the severity of a finding kind (e.g."
            " forbidden-tool=critical); repeatable.",
        ),
        click.option(
            "--fail-on-severity",
            type=click.Choice(n.SEVERITIES),
            help="Adversarial suites: a finding at or above LEVEL fails its trial and task.",
        ),
        click.option(
            "--require-all-tasks",
            is_flag=True,
            help="The gate needs every task to pass, beside the suite's gated aggregate"
            " (the suite's gate policy may already say so).",
        ),
        click.option(
            "--unknown-cost",
            type=click.Choice(["fail", "zero"]),
            help="With maxCostUsd set, a trial that reports no cost: fail (the default)"
            " keeps the gate shut; zero counts it as 0, as RFC 0246 does.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@dataclass(frozen=True)
class ModeArgs:
    """The ``run`` and ``grade`` options of the other modes, as given."""

    baseline: str | None = None
    canaries: tuple[str, ...] = ()
    canaries_file: str | None = None
    no_secret_scan: bool = False
    severities: tuple[str, ...] = ()
    fail_on_severity: str | None = None
    require_all_tasks: bool = False
    unknown_cost: str | None = None

    @property
    def detectors_given(self) -> bool:
        return bool(self.canaries or self.canaries_file or self.no_secret_scan or self.severities)


NAMES: Names = {
    ("baseline",): "--baseline",
    ("terms", "fail_on_severity"): "--fail-on-severity",
    ("terms", "require_all_tasks"): "--require-all-tasks",
    ("terms", "unknown_cost"): "--unknown-cost",
    ("safety",): "--canary, --canaries-file, --no-secret-scan and --severity",
    ("safety", "severities"): "--severity",
    ("options", "shard"): "--shard:",
    ("options", "live_shadow"): "",
}
"""The command line's names of a spec's members, for its problems."""


def with_terms(err: Console, spec: RunSpec, given: ModeArgs) -> RunSpec:
    """``spec`` with the terms and detectors the options ask for (files read here; whether
    they fit the suite is the spec's check)."""
    terms = replace(
        spec.terms,
        fail_on_severity=cast(Severity | None, given.fail_on_severity),
        require_all_tasks=given.require_all_tasks,
        unknown_cost=cast(UnknownCost | None, given.unknown_cost),
    )
    safety = _safety(err, given) if given.detectors_given else None
    return replace(spec, terms=terms, baseline=_baseline(err, given.baseline), safety=safety)


def checked(err: Console, spec: RunSpec, store: Store) -> RunSpec:
    """The spec settled against ``store``; its problems, named as the options, are usage
    errors (exit 2). Says which baseline a regression run chose when none was named."""
    settled, problems = settle(spec, store)
    if problems:
        usage(err, "\n".join(escape(describe(p, NAMES)) for p in problems))
    if isinstance(spec.baseline, NewestBaseline) and "regression" in settled.modes:
        _newest(err, settled)
    return settled


def _newest(err: Console, spec: RunSpec) -> None:
    found = spec.terms.baseline
    if spec.suite is None:
        return
    suite = spec.suite.suite
    if found is None:
        ref = f"{suite.suite_id}@{suite.version}"
        err.print(f"regression: no completed run of {escape(ref)} yet; this run has no baseline")
    else:
        err.print(f"regression: baseline {escape(found.run_id)} (the newest completed run)")


def _baseline(err: Console, given: str | None) -> BaselineChoice:
    """``--baseline RUN_ID|FILE``: a summary read from the file, else a run of the store;
    not given, the newest completed run (when the run is a regression run)."""
    if given is None:
        return NEWEST
    if not Path(given).is_file():
        return StoredBaseline(given)
    try:
        read = read_summary_file(given)
    except SummaryFileError as exc:
        usage(err, str(exc))
    return SummaryBaseline(read.summary, read.run_id, read.source)


def _safety(err: Console, given: ModeArgs) -> SafetyPolicy:
    """The detectors the options ask for."""
    levels = dict(DEFAULT_SEVERITIES)
    for spec in given.severities:
        kind, _, level = spec.partition("=")
        if finding_problem(kind, level) is not None:
            usage(
                err,
                f"--severity {spec}: expected KIND=LEVEL, LEVEL one of {', '.join(n.SEVERITIES)}",
            )
        levels[kind] = cast(Severity, level)
    planted = list(given.canaries)
    if given.canaries_file is not None:
        data, problem = read_bounded(Path(given.canaries_file))
        if problem is not None:
            usage(err, f"{given.canaries_file}: {problem}")
        try:
            planted += [line.strip() for line in data.decode("utf-8").splitlines()]
        except UnicodeDecodeError:
            usage(err, f"{given.canaries_file}: not UTF-8 text")
    return SafetyPolicy(
        canaries=tuple(c for c in planted if c),
        scan_secrets=not given.no_secret_scan,
        severities=levels,
    )
