"""The command line: `openwop-eval validate` exit codes and output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import COMMANDS, main
from tests.files.test_suites import FIVE_MISTAKES_YAML
from tests.fuzz.test_limits import BILLION_LAUGHS
from tests.helpers import golden, suite_doc

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


def test_help_lists_every_command_and_each_imports_only_when_run() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from openwop_eval.cli.main import COMMANDS, main\n"
        "loaded = [m for m in COMMANDS.values() if f'openwop_eval.cli.{m}' in sys.modules]\n"
        "out = CliRunner().invoke(main, ['serve', '--help']).output\n"
        "later = [m for m in COMMANDS.values() if f'openwop_eval.cli.{m}' in sys.modules]\n"
        "print(loaded, later, 'alembic' in sys.modules, 'httpx' in sys.modules, '--config' in out)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]", "['serve_cmd']", "False", "False", "True"]
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line}
    assert listed == {*COMMANDS, "validate"}
    assert CliRunner().invoke(main, ["nosuch"]).exit_code == 2


# --- hostile input (issue 8): exit 2 with located problems, bounded output --------------

VALID = json.dumps(suite_doc(golden("t")))
HOSTILE = {
    "alias-bomb.yaml": BILLION_LAUGHS,
    "deep.json": '{"suiteId": ' + "[" * 1000 + "]" * 1000 + "}",
    "deep.yaml": "suiteId: " + "[" * 1000 + "]" * 1000,
    "control.yaml": "suiteId: a\x01\n",
    "keys.yaml": "1.5: 1e999\n~: 3\n",
    # valid suites but for one value: before issue 8 these validated, then crashed the run
    "huge-int.json": VALID.replace('"input": {}', '"input": 9007199254740993'),
    "inf.json": VALID.replace('"value": "ok"', '"value": 1e999'),
    "trials.json": VALID.replace('"tasks"', '"trials": {"count": 1000000000}, "tasks"'),
    "tasks.yaml": "tasks:\n" + "  - {}\n" * 100_000,
    "bytes.json": '{"suiteId": "\udcff"}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_hostile_suites_exit_two_with_located_problems(
    tmp_path: Path, name: str, command: str
) -> None:
    path = tmp_path / name
    path.write_bytes(HOSTILE[name].encode("utf-8", "surrogateescape"))
    argv = [command, str(path)]
    if command == "run":
        argv += ["--agent", "scripted:none.json", "--store", f"sqlite:///{tmp_path / 's.db'}"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # not a traceback
    assert f"{path}:" in result.output
    assert result.output.rstrip().endswith("; nothing was run")


def test_run_reports_the_problems_validate_reports(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(FIVE_MISTAKES_YAML.replace("count: 2", "count: 2, extra: 1e999"))
    validated = CliRunner().invoke(main, ["validate", str(path)])
    ran = CliRunner().invoke(
        main,
        ["run", str(path), "--agent", "scripted:x.json", "--store", f"sqlite:///{tmp_path}/s"],
    )
    assert validated.exit_code == ran.exit_code == 2
    assert ran.stderr == validated.stdout
    assert "$.trials.extra error: inf is not a JSON number" in ran.stderr


def suite_with_missing_members(tasks: int) -> str:
    """Each task lacks input and expected: two problems a task."""
    doc = {
        "suiteId": "acme.x.evals.y",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [{"taskId": f"t{i}"} for i in range(tasks)],
    }
    return json.dumps(doc, indent=1)


def test_validate_prints_the_first_fifty_problems_then_a_count(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(suite_with_missing_members(100))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert sum(" error: missing required key" in line for line in lines) == 50
    assert lines[-2:] == ["… and 150 more problems", f"✗ {path}: 200 errors; nothing was run"]


def test_validate_json_lists_at_most_a_thousand_problems_and_counts_all(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(suite_with_missing_members(600))
    result = CliRunner().invoke(main, ["validate", "--json", str(path)])
    assert result.exit_code == 2
    report = json.loads(result.output)
    assert len(report["problems"]) == 1000
    assert report["problemCount"] == 1200


def test_keys_from_the_document_cannot_drive_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"\x1b[2J\x1b[31mred": 1}))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert "\x1b" not in result.output
    assert '$["\\x1b[2J\\x1b[31mred"] error: unknown key' in result.output


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_validate_dev_zero_ends_with_exit_two() -> None:
    result = CliRunner().invoke(main, ["validate", "/dev/zero"])
    assert result.exit_code == 2
    assert "over the limit of 16,777,216 bytes" in result.output
