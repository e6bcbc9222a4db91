"""Kill-and-resume as a property of the command line: a run killed at any commit — before
it, inside its transaction (a trial's events without its score), after it, mid group-commit,
at the final verdict — and resumed, ends with the summary of the uninterrupted run, on
SQLite and PostgreSQL, served by the suite's fixtures or by a recording."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from openwop_eval.store import Store
from tests.faults.scenario import check_log, write_files

PLANT = Path(__file__).parent / "plant"

POINTS = [
    ("1", "before"),
    ("1", "mid"),
    ("2", "after"),
    ("3", "mid"),
    ("eval.completed", "before"),
    ("eval.completed", "after"),
]


def cli(*args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLANT), *sys.path])}
    env.pop("OPENWOP_EVAL_TEST_FAULT", None)
    if fault is not None:
        env["OPENWOP_EVAL_TEST_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-m", "openwop_eval", "run", *args, "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@cache
def _scenario(folder: str) -> dict[str, Path]:
    paths = write_files(Path(folder))
    recorded = Path(folder) / "x-events.jsonl"
    x_store = f"sqlite:///{Path(folder) / 'x.sqlite'}"
    ran = cli(str(paths["suite"]), "--agent", f"scripted:{paths['x']}", "--store", x_store,
              "--events", str(recorded))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    paths["recording"] = recorded
    return paths


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _scenario(str(tmp_path_factory.mktemp("scenario")))


def _args(files: dict[str, Path], source: str) -> list[str]:
    args = [str(files["suite"]), "--agent", f"scripted:{files['y']}", "--concurrency", "2"]
    if source == "recording":
        args += ["--fixtures-from", str(files["recording"])]
    return args


@cache
def _uninterrupted(folder: str, source: str) -> tuple[int, dict[str, object]]:
    files = _scenario(folder)
    out = Path(folder) / f"clean-{source}.json"
    store = f"sqlite:///{Path(folder) / f'clean-{source}.sqlite'}"
    ran = cli(*_args(files, source), "--store", store, "--out", str(out))
    return ran.returncode, json.loads(out.read_text())


def test_the_scenario_turns_on_the_fixture_source(files: dict[str, Path]) -> None:
    folder = str(files["suite"].parent)
    assert _uninterrupted(folder, "suite")[0] == 0
    code, summary = _uninterrupted(folder, "recording")
    assert code == 1
    assert summary["passed"] is False


@pytest.mark.parametrize("source", ["suite", "recording"])
@pytest.mark.parametrize(("when", "mode"), POINTS)
def test_a_killed_run_resumes_to_the_uninterrupted_summary(
    files: dict[str, Path], database: str, source: str, when: str, mode: str, tmp_path: Path
) -> None:
    code, expected = _uninterrupted(str(files["suite"].parent), source)
    killed = cli(*_args(files, source), "--store", database, fault=f"{when}:{mode}")
    assert killed.returncode == -9, killed.stderr
    store = Store(database)
    (run,) = store.list_runs()
    assert run.status == "running"

    out = tmp_path / "resumed.json"
    resumed = cli("--resume", run.run_id, "--store", database, "--out", str(out))
    after = store.get_run(run.run_id)
    assert after is not None
    assert after.status == "completed"
    if (when, mode) == ("eval.completed", "after"):  # the log had already decided the run
        assert resumed.returncode == 2
        assert "already completed" in resumed.stderr
    else:
        assert resumed.returncode == code, resumed.stderr
        assert json.loads(out.read_text()) == expected
    assert after.summary == expected
    check_log(store.events(run.run_id))
    store.close()
