"""What `run` prints, `--markdown` writes and a pytest item reports comes from the run's
outline: per task, and the first few failed trials of each; past 50 tasks, only the tasks
that did not pass. No trial is read back from the store for it, so the command's memory
does not grow with the run (100,000 trials read back took 2 GB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.reports.model import build_report
from openwop_eval.reports.text import listed_tasks, task_text
from openwop_eval.runner import stored as detail_module
from tests.helpers import golden, graded, suite_doc, trial

AGENT = """
def agent(input, tools):
    return "ok" if input["good"] else "no"
"""


def _read_back(*_args: object) -> None:
    raise AssertionError("the run's trials were read back")


def test_the_table_shows_the_first_failed_trials_and_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = [{**golden(t), "input": {"good": good}} for t, good in (("a", False), ("b", True))]
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(suite_doc(*tasks, trials={"count": 8})))
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.setattr(detail_module, "detail", _read_back)
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(
        main,
        [
            "run", str(suite), "--agent", f"{tmp_path / 'agent.py'}:agent", "--quiet",
            "--store", f"sqlite:///{tmp_path / 'store.sqlite'}",
            "--markdown", str(tmp_path / "summary.md"),
        ],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    shown = [f"#{i} score 0 is below passScore 1" for i in range(1, 6)]
    assert all(line in result.output for line in shown)
    assert "#6 " not in result.output
    assert "… and 3 more failed trials (all in the report)" in result.output
    assert "1/2 tasks passed" in result.output
    markdown = (tmp_path / "summary.md").read_text()
    assert "| `a` | 0 | 0 | **no** | trial 1: score 0 is below passScore 1 |" in markdown
    assert "| `b` | 1 | 1 | yes |  |" in markdown


def test_past_fifty_tasks_only_those_that_did_not_pass_are_listed(tmp_path: Path) -> None:
    tasks = [{**golden(f"t{i:02d}"), "input": {"good": i not in (7, 42)}} for i in range(60)]
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps(suite_doc(*tasks, trials={"count": 1})))
    (tmp_path / "agent.py").write_text(AGENT)
    result = CliRunner().invoke(
        main,
        [
            "run", str(suite), "--agent", f"{tmp_path / 'agent.py'}:agent", "--quiet",
            "--store", f"sqlite:///{tmp_path / 'store.sqlite'}",
            "--markdown", str(tmp_path / "summary.md"),
        ],
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    listed = {f"t{i:02d}" for i in range(60) if f"│ t{i:02d} " in result.output}
    assert listed == {"t07", "t42"}
    line = "the 58 tasks that passed are not listed (past 50 tasks only those that did not"
    assert line in result.output
    assert "58/60 tasks passed" in result.output
    markdown = (tmp_path / "summary.md").read_text()
    assert [row.split("`")[1] for row in markdown.splitlines() if row.startswith("| `")] == [
        "t07",
        "t42",
    ]
    assert "The 58 tasks that passed are not listed (past 50 tasks" in markdown


@pytest.mark.parametrize(("tasks", "failing", "shown"), [(50, 50, 50), (51, 0, 0), (70, 60, 50)])
def test_a_table_lists_every_task_up_to_fifty_then_the_first_fifty_that_did_not_pass(
    tasks: int, failing: int, shown: int
) -> None:
    doc = suite_doc(*(golden(f"t{i:02d}") for i in range(tasks)))
    records = [trial(f"t{i:02d}", 0, "no" if i < failing else "ok") for i in range(tasks)]
    listed, left_out = listed_tasks(build_report("local/r", "", graded(doc, *records), {}, {}))
    if tasks <= 50:
        assert [t.task_id for t in listed] == [f"t{i:02d}" for i in range(tasks)]
        assert left_out is None
    else:
        assert [t.task_id for t in listed] == [f"t{i:02d}" for i in range(shown)]
        assert left_out is not None
        head = f"listed: the first 50 of the {failing} that did not pass; " if failing > 50 else ""
        assert left_out.startswith(f"{head}the {tasks - failing} tasks that passed are not listed")


def test_a_pytest_item_names_the_first_five_failed_trials_and_counts_the_rest() -> None:
    doc = suite_doc(golden("t"), trials={"count": 8})
    records = [trial("t", i, "ok" if i in (1, 4) else "no") for i in range(8)]
    task = build_report("local/r", "", graded(doc, *records), {}, {}).tasks[0]
    lines = task_text(task, 8, "local/r").splitlines()
    assert lines[1:7] == [
        *(f"  #{i} score 0 is below passScore 1" for i in (1, 3, 4, 6, 7)),
        "  … and 1 more failed trial (all in the report)",
    ]
    assert lines[-1] == "score 0.25, gated 0.25; run local/r"
