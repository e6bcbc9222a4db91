"""Kill-and-resume as a property of the command line: a run killed at any commit — before
it, inside its transaction (a trial's events without its score), after it, mid group-commit,
at the final verdict — and resumed, ends with the summary of the uninterrupted run, on
SQLite and PostgreSQL, served by the suite's fixtures or by a recording.

The killed run is a forked copy of this process that a planted fault SIGKILLs — a real
death, with nothing flushed — and everything else runs in this process.
"""

from __future__ import annotations

import json
import os
import signal
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from openwop_eval.runner.commit_process import SETTING
from openwop_eval.store import Store
from tests.faults.planting import plant
from tests.faults.scenario import check_log, write_files

POINTS = [  # N: the commit that holds the N-th trial (see planting)
    ("1", "before"),
    ("1", "mid"),
    ("2", "after"),
    ("3", "mid"),  # the third trial cut, whatever trials share its commit
    ("eval.completed", "before"),
    ("eval.completed", "after"),
]


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args, "--quiet"])


def killed(*args: str, fault: str, committer: str = "thread") -> int:
    """Run the command in a forked child with ``fault`` planted; the signal that ended it.
    ``committer``: where its commits run (a commit process kills the command, its parent,
    then itself)."""
    pid = os.fork()
    if pid == 0:  # the child: it must die of the fault, never return into pytest
        try:
            os.environ[SETTING] = committer
            plant(fault)
            cli(*args)
        finally:
            os._exit(70)
    _, status = os.waitpid(pid, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)


@cache
def _scenario(folder: str) -> dict[str, Path]:
    paths = write_files(Path(folder))
    recorded = Path(folder) / "x-events.jsonl"
    x_store = f"sqlite:///{Path(folder) / 'x.sqlite'}"
    ran = cli(str(paths["suite"]), "--agent", f"scripted:{paths['x']}", "--store", x_store,
              "--events", str(recorded))  # fmt: skip
    assert ran.exit_code == 0, ran.output
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
    return ran.exit_code, json.loads(out.read_text())


def test_the_scenario_turns_on_the_fixture_source(files: dict[str, Path]) -> None:
    folder = str(files["suite"].parent)
    assert _uninterrupted(folder, "suite")[0] == 0
    code, summary = _uninterrupted(folder, "recording")
    assert code == 1
    assert summary["passed"] is False


@pytest.mark.parametrize("committer", ["thread", "process"])
@pytest.mark.parametrize("source", ["suite", "recording"])
@pytest.mark.parametrize(("when", "mode"), POINTS)
def test_a_killed_run_resumes_to_the_uninterrupted_summary(
    files: dict[str, Path],
    database: str,
    source: str,
    when: str,
    mode: str,
    committer: str,
    tmp_path: Path,
) -> None:
    code, expected = _uninterrupted(str(files["suite"].parent), source)
    args = (*_args(files, source), "--store", database)
    assert killed(*args, fault=f"{when}:{mode}", committer=committer) == signal.SIGKILL
    store = Store(database)
    try:
        (run,) = store.list_runs()
        assert run.status == "running"
        out = tmp_path / "resumed.json"
        resumed = cli("--resume", run.run_id, "--store", database, "--out", str(out))
        after = store.get_run(run.run_id)
        assert after is not None
        assert after.status == "completed"
        if (when, mode) == ("eval.completed", "after"):  # the log had already decided the run
            assert resumed.exit_code == 2
            assert "already completed" in resumed.stderr
        else:
            assert resumed.exit_code == code, resumed.output
            assert json.loads(out.read_text()) == expected
        assert after.summary == expected
        check_log(store.events(run.run_id))
    finally:
        store.close()
