"""Running ``grade``, ``run`` and ``verify`` in process, each on its own output directory."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main

from .scenario import write_script, write_suite


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    dir: Path

    @property
    def summary(self) -> Any:
        path = self.dir / "summary.json"
        return json.loads(path.read_text()) if path.exists() else None

    @property
    def events(self) -> Path:
        return self.dir / "events.jsonl"

    @property
    def report(self) -> Any:
        return json.loads((self.dir / "report.json").read_text())


Invoke = Callable[..., Outcome]


@pytest.fixture
def cli(tmp_path: Path) -> Invoke:
    """``cli("grade", SUITE, TRACE, ...)``: the command with every output in a fresh directory."""
    counter = iter(range(1000))
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"

    def invoke(command: str, *args: str) -> Outcome:
        out = tmp_path / f"{command}{next(counter)}"
        out.mkdir()
        argv = [command, *args]
        if command in ("grade", "run"):
            argv += ["--store", store, "--out", str(out / "summary.json")]
            argv += ["--events", str(out / "events.jsonl"), "--report", str(out / "report.json")]
        if command == "run":
            argv.append("--quiet")
        result = CliRunner().invoke(main, argv, catch_exceptions=False)
        return Outcome(result.exit_code, result.stdout, result.stderr, out)

    return invoke


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    return write_suite(tmp_path)


@pytest.fixture
def equivalent(cli: Invoke, suite_path: Path, tmp_path: Path) -> Callable[..., Outcome]:
    """The scripted run the traces record (latencies as the traces give them)."""

    def run(trials: Any = None) -> Outcome:
        agent = write_script(tmp_path, trials)
        return cli("run", str(suite_path), "--agent", f"scripted:{agent}")

    return run


def assert_same_grade(graded: Outcome, ran: Outcome, cli: Invoke, suite: Path) -> None:
    """Same exit code, the same summary exactly, and ``verify`` agrees with the grade's log."""
    assert ran.exit_code == 1, ran.stderr
    assert graded.exit_code == ran.exit_code, graded.stderr
    assert graded.summary == ran.summary
    checked = cli(
        "verify", str(suite), str(graded.events), "--summary", str(graded.dir / "summary.json")
    )
    assert checked.exit_code == 0, checked.stderr
    assert "agrees with the event log" in checked.stderr
