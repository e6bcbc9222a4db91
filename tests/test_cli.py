"""The command line: `openwop-eval validate` exit codes and output."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from openwop_eval.cli.main import main
from tests.test_suitefile import FIVE_MISTAKES_YAML

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples/support-refunds/suite.yaml"


def test_validate_a_valid_suite_exits_zero() -> None:
    result = CliRunner().invoke(main, ["validate", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "valid suite acme.support.evals.refunds@1.0.0 (3 tasks)" in result.output


def test_validate_lists_every_problem_and_exits_two(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(FIVE_MISTAKES_YAML)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert (
        lines[0]
        == f"{path}:4 $.trials.k error: k is 3 but count is 2; k must be between 1 and count"
    )
    assert sum(" error: " in line for line in lines) == 6
    assert lines[-1].endswith("6 errors; nothing was run")


def test_validate_json_output(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(FIVE_MISTAKES_YAML)
    result = CliRunner().invoke(main, ["validate", "--json", str(path)])
    assert result.exit_code == 2
    report = json.loads(result.output)
    assert report["valid"] is False
    assert report["problems"][0] == {
        "path": "$.trials.k",
        "line": 4,
        "severity": "error",
        "message": "k is 3 but count is 2; k must be between 1 and count",
    }


def test_validate_a_missing_file_exits_two_without_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "cannot read the file" in result.output
    assert "Traceback" not in result.output


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert "openwop-eval" in result.output
