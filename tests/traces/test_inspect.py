"""Inspect AI logs written by ``inspect_ai`` itself, on its ``mockllm`` model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log

from openwop_eval.traces import read_trace_file

from .conftest import Invoke, assert_same_grade
from .scenario import TRIALS, Trial

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def inspect_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario run by Inspect (in a child process: see ``inspect_task``), its log."""
    home = tmp_path_factory.mktemp("inspect")
    env = {**os.environ, "XDG_DATA_HOME": str(home / "data"), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.traces.inspect_task", str(home / "logs")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


def latencies(path: Path) -> dict[str, list[Trial]]:
    """The scenario with each trial's latency as Inspect measured it (its ``total_time``)."""
    trials = {task: list(entries) for task, entries in TRIALS.items()}
    for sample in read_eval_log(str(path)).samples or ():
        old = trials[str(sample.id)][sample.epoch - 1]
        trials[str(sample.id)][sample.epoch - 1] = Trial(
            old.output, old.calls, sample.total_time * 1000, None
        )
    return trials


def test_grading_an_inspect_log_gives_the_summary_of_the_equivalent_scripted_run(
    cli: Invoke, suite_path: Path, inspect_log: Path, equivalent: Any
) -> None:
    graded = cli("grade", str(suite_path), str(inspect_log))
    assert_same_grade(graded, equivalent(latencies(inspect_log)), cli, suite_path)


def test_samples_are_tasks_and_epochs_are_trials_from_zero(inspect_log: Path) -> None:
    traces, problems = read_trace_file(str(inspect_log))
    assert not problems
    got = {
        (t.task_id, t.trial): ([(c.tool, c.args, c.result) for c in t.calls], t.output)
        for t in traces
    }
    assert got == {
        (task, i): ([(c.tool, c.args, c.result) for c in trial.calls], trial.output)
        for task, trials in TRIALS.items()
        for i, trial in enumerate(trials)
    }


def test_a_damaged_inspect_log_is_a_problem_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.eval"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    traces, problems = read_trace_file(str(path))
    assert not traces
    assert len(problems) == 1
    assert str(problems[0]).startswith(f"{path}: not a readable Inspect log: ")
