"""A run with every report grades each trial once: the reports — JSON, HTML, Markdown, JUnit,
the summary and the run table, all renderings of one report model — read the grades the run
made, not the log graded again; ``report`` after the fact grades each trial once too, and
both write the same reports."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from openwop_eval.store import Store
from tests.helpers import count_grading
from tests.modes.crash import forget_task
from tests.runner import test_resume as resume
from tests.runner.conftest import write

EXAMPLE = Path(__file__).parent.parent.parent / "examples/support-refunds"
REPORTS = ("report.json", "report.html", "report.md", "report.xml", "summary.json")
TRIALS = 9  # three tasks, three trials each


@pytest.fixture
def graded(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, int]]:
    return count_grading(monkeypatch)


def cli(*argv: str) -> Result:
    return CliRunner().invoke(main, list(argv), catch_exceptions=False)


def reports(out: Path) -> list[str]:
    flags = ("--report", "--html", "--markdown", "--junit", "--out")
    return [
        arg for flag, name in zip(flags, REPORTS, strict=True) for arg in (flag, str(out / name))
    ]


def run(tmp: Path, store: str) -> Result:
    (tmp / "run").mkdir()
    return cli(
        "run",
        str(EXAMPLE / "suite.yaml"),
        "--agent",
        f"{EXAMPLE / 'agent.py'}:support_agent",
        "--judge",
        f"scripted:{EXAMPLE / 'judge.json'}",
        "--concurrency",
        "1",
        "--quiet",
        "--store",
        store,
        *reports(tmp / "run"),
    )


def test_a_run_with_every_report_grades_each_trial_once(
    tmp_path: Path, graded: Counter[tuple[str, int]]
) -> None:
    result = run(tmp_path, f"sqlite:///{tmp_path / 's.db'}")
    assert result.exit_code == 1, result.output  # the example's agent fails the gate
    assert len(graded) == TRIALS
    assert set(graded.values()) == {1}
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert sum(len(t["trials"]) for t in report["tasks"]) == TRIALS
    assert "#2 step 1 (crm:lookup-order) was never called" in result.stdout  # the table
    assert "NOT PASSED  aggregate 1, gated 0.556 (pass score 0.8)" in result.stdout


def test_the_reports_read_from_the_store_are_the_reports_the_run_wrote(
    tmp_path: Path, graded: Counter[tuple[str, int]]
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    run(tmp_path, store)
    run_id = json.loads((tmp_path / "run" / "report.json").read_text())["runId"]
    graded.clear()
    (tmp_path / "later").mkdir()
    assert cli("report", run_id, "--store", store, *reports(tmp_path / "later")).exit_code == 0
    assert len(graded) == TRIALS
    assert set(graded.values()) == {1}
    for name in REPORTS:
        read: Callable[[Path], str] = Path.read_text
        assert read(tmp_path / "later" / name) == read(tmp_path / "run" / name), name


RAISING = (
    resume.AGENT
    + """
def raising(input, tools):
    if input["task"] == "a":
        raise ValueError("boom on " + input["task"])
    if f"{input['task']}:{tools.context.trial}" == os.environ["KILL_AT"]:
        committed(4)  # the trials before this one are in the store when it is killed
    return agent(input, tools)

def committed(count):
    import sqlite3, time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with sqlite3.connect(os.environ["STORE_FILE"]) as db:
            query = "select count(*) from events where type = 'eval.scored'"
            if db.execute(query).fetchone()[0] >= count:
                return
        time.sleep(0.01)
    raise TimeoutError("the earlier trials were never committed")
"""
)


def test_a_resumed_run_reports_its_earlier_trials_as_the_store_does(tmp_path: Path) -> None:
    common = [str(write(tmp_path / "suite.json", resume.suite())), "--concurrency", "1"]
    agent = ["--agent", f"{write(tmp_path / 'agent.py', RAISING)}:raising"]
    url = f"sqlite:///{tmp_path / 's.db'}"
    marker, db = str(tmp_path / "killed"), str(tmp_path / "s.db")
    env = {"KILL_AT": "b:1", "KILL_MARKER": marker, "STORE_FILE": db}
    assert resume.cli(*common, *agent, "--store", url, env=env).returncode == -9
    (run_id,) = [r.run_id for r in Store(url).list_runs()]
    ran = tmp_path / "ran.json"
    resumed = resume.cli("--resume", run_id, *agent, "--store", url, "--report", str(ran), env=env)
    assert resumed.returncode == 1, resumed.stderr
    later = tmp_path / "later.json"
    assert cli("report", run_id, "--store", url, "--report", str(later)).exit_code == 0
    assert later.read_text() == ran.read_text()
    first = json.loads(ran.read_text())["tasks"][0]["trials"][0]  # graded before the kill
    assert any("boom on a" in r["message"] for r in first["reasons"])  # its error's text


def test_a_resumed_run_without_its_agent_named_again_grades_each_trial_once(
    tmp_path: Path, graded: Counter[tuple[str, int]]
) -> None:
    """``--resume`` without ``--agent`` keeps the run's own options and still keeps its
    trials' grades for the report: none is graded twice."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    run(tmp_path, url)
    run_id = json.loads((tmp_path / "run" / "report.json").read_text())["runId"]
    forget_task(Store(url), run_id, "refund-delivered-order")
    graded.clear()
    report = tmp_path / "resumed.json"
    judge = f"scripted:{EXAMPLE / 'judge.json'}"
    result = cli(
        "run",
        "--resume",
        run_id,
        "--judge",
        judge,
        "--quiet",
        "--store",
        url,
        "--report",
        str(report),
    )
    assert result.exit_code == 1, result.output
    assert len(graded) == TRIALS  # three trials ran again, six were read back
    assert set(graded.values()) == {1}
    body = json.loads(report.read_text())
    assert sum(len(t["trials"]) for t in body["tasks"]) == TRIALS
