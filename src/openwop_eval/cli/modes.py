"""The ``run`` options of the protocol's other modes: a regression run's baseline and an
adversarial run's detectors. Resolved here, before anything runs, into the runner's terms."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click
from rich.console import Console
from rich.markup import escape

from ..core import Suite
from ..core import names as n
from ..core.plan import Baseline, RunTerms
from ..core.safety import DEFAULT_SEVERITIES, SafetyPolicy, Severity, finding_problem
from ..documents import read_bounded
from ..runner.baseline import BaselineError, baseline_run, baseline_summary, newest_baseline
from ..store import Store
from ..summaryfile import SummaryFileError, read_summary_file
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
    ]
    for option in reversed(options):
        command = option(command)
    return command


def run_terms(
    err: Console, store: Store, suite: Suite, baseline: str | None, fail_on: str | None
) -> RunTerms:
    """The terms of a new run of ``suite``: its baseline, chosen and named, and the bar."""
    if baseline is not None and "regression" not in suite.modes:
        usage(err, "--baseline needs a suite whose modes include regression")
    if fail_on is not None and "adversarial" not in suite.modes:
        usage(err, "--fail-on-severity needs a suite whose modes include adversarial")
    chosen = None
    if "regression" in suite.modes:
        chosen = _baseline(err, store, suite, baseline)
    return RunTerms(fail_on_severity=cast(Severity | None, fail_on), baseline=chosen)


def _baseline(err: Console, store: Store, suite: Suite, given: str | None) -> Baseline | None:
    try:
        if given is not None and Path(given).is_file():
            read = read_summary_file(given)
            return baseline_summary(read.summary, read.run_id, suite, read.source)
        if given is not None:
            return baseline_run(store, suite, "local", given)
    except (BaselineError, SummaryFileError) as exc:
        usage(err, str(exc))
    found = newest_baseline(store, suite, "local")
    ref = f"{suite.suite_id}@{suite.version}"
    if found is None:
        err.print(f"regression: no completed run of {escape(ref)} yet; this run has no baseline")
    else:
        err.print(f"regression: baseline {escape(found.run_id)} (the newest completed run)")
    return found


def safety_policy(
    err: Console,
    suite: Suite,
    canaries: tuple[str, ...],
    canaries_file: str | None,
    no_secret_scan: bool,
    severities: tuple[str, ...] = (),
) -> SafetyPolicy | None:
    """The detectors of an adversarial run (None when the suite is not adversarial)."""
    given = bool(canaries or canaries_file or no_secret_scan or severities)
    if "adversarial" not in suite.modes:
        if given:
            usage(
                err,
                "--canary, --canaries-file, --no-secret-scan and --severity need an"
                " adversarial suite",
            )
        return None
    levels = dict(DEFAULT_SEVERITIES)
    for spec in severities:
        kind, _, level = spec.partition("=")
        if finding_problem(kind, level) is not None:
            usage(
                err,
                f"--severity {spec}: expected KIND=LEVEL, LEVEL one of {', '.join(n.SEVERITIES)}",
            )
        levels[kind] = cast(Severity, level)
    planted = list(canaries)
    if canaries_file is not None:
        data, problem = read_bounded(Path(canaries_file))
        if problem is not None:
            usage(err, f"{canaries_file}: {problem}")
        try:
            planted += [line.strip() for line in data.decode("utf-8").splitlines()]
        except UnicodeDecodeError:
            usage(err, f"{canaries_file}: not UTF-8 text")
    return SafetyPolicy(
        canaries=tuple(c for c in planted if c), scan_secrets=not no_secret_scan, severities=levels
    )
