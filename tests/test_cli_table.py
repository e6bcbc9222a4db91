"""What `run` prints, and `--markdown` writes, comes from the run's outline: per task, and
the first few failed trials of each. No trial is read back from the store for it, so the
command's memory does not grow with the run (100,000 trials read back took 2 GB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.runner import run as run_module
from tests.helpers import golden, suite_doc

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
    monkeypatch.setattr(run_module, "detail", _read_back)
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
