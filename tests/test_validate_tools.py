"""`openwop-eval validate` knows the tools: a trajectory step naming a tool that neither the
fixtures nor the tool catalog, live tools or MCP upstreams given provide is a located
warning with the closest name; ``--strict`` makes it an error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# imported before CliRunner swaps sys.stderr: its stdio client's errlog default is bound then
import mcp.client.stdio  # noqa: F401
from click.testing import CliRunner, Result

from openwop_eval.cli.main import main

UPSTREAM = Path(__file__).parent / "mcp_servers" / "upstream_server.py"

SUITE = """\
suiteId: acme.travel.evals.flights
version: 1.0.0
modes: [golden]
tasks:
  - taskId: book
    input: {{}}
    expected:
      kind: golden
      match: {{strategy: exact, value: ok}}
      trajectory:
        steps:
          - tool: "{step}"
        forbidden: ["{forbidden}"]
    fixtures:
      toolResponses:
        - tool: "flights:book"
          response: {{}}
"""


def write(tmp: Path, step: str, forbidden: str = "payments:refund") -> Path:
    path = tmp / "suite.yaml"
    path.write_text(SUITE.format(step=step, forbidden=forbidden))
    return path


def validate(*argv: str | Path) -> Result:
    return CliRunner().invoke(main, ["validate", *map(str, argv)])


def catalog(tmp: Path, *tools: str) -> Path:
    path = tmp / "catalog.json"
    path.write_text(json.dumps({"tools": {t: {} for t in tools}}))
    return path


def test_a_typo_in_a_step_is_a_located_warning_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "flights:bok")
    result = validate(path)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{path}:12 $.tasks[0].expected.trajectory.steps[0].tool warning: 'flights:bok' is not"
        " a tool provided by the task's fixtures: a call to it is a miss, which fails the"
        " trial; did you mean 'flights:book'?",
        f"✓ {path}: valid suite acme.travel.evals.flights@1.0.0 (1 task)",
    ]


def test_strict_makes_the_warning_an_error_and_exits_two(tmp_path: Path) -> None:
    path = write(tmp_path, "flights:bok")
    result = validate(path, "--strict")
    assert result.exit_code == 2
    assert " error: 'flights:bok' is not a tool provided by" in result.output
    assert result.output.splitlines()[-1] == f"✗ {path}: 1 error; nothing was run"
    report = json.loads(validate(path, "--strict", "--json").output)
    assert report["valid"] is False
    assert report["problems"][0]["severity"] == "error"
    assert report["problems"][0]["line"] == 12


def test_strict_changes_nothing_for_a_suite_without_warnings(tmp_path: Path) -> None:
    result = validate(write(tmp_path, "flights:book"), "--strict")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output


def test_a_step_the_catalog_alone_provides_is_not_flagged(tmp_path: Path) -> None:
    path = write(tmp_path, "flights:search")
    assert "warning" in validate(path).output  # the fixtures answer only flights:book
    result = validate(path, "--tool-catalog", catalog(tmp_path, "flights:search"), "--strict")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output


def test_a_forbidden_typo_is_flagged_given_a_catalog(tmp_path: Path) -> None:
    path = write(tmp_path, "flights:book", forbidden="acounts:delete")
    assert "warning" not in validate(path).output
    result = validate(path, "--tool-catalog", catalog(tmp_path, "accounts:delete"))
    assert result.exit_code == 0
    assert f"{path}:13 $.tasks[0].expected.trajectory.forbidden[0] warning:" in result.output
    assert "did you mean 'accounts:delete'?" in result.output


def test_live_tools_provide_their_names(tmp_path: Path) -> None:
    tools = tmp_path / "tools.py"
    tools.write_text("TOOLS = {'flights:search': lambda args: {}}\n")
    result = validate(write(tmp_path, "flights:search"), "--tools", tools, "--strict")
    assert result.exit_code == 0, result.output


def test_an_mcp_upstream_is_listed_for_its_tools(tmp_path: Path) -> None:
    upstream = f"crm=stdio:{sys.executable} {UPSTREAM} crm"
    result = validate(write(tmp_path, "crm:lookup-ordr"), "--mcp-upstream", upstream)
    assert result.exit_code == 0, result.output
    assert "provided by the task's fixtures or the MCP upstreams" in result.output
    assert "did you mean 'crm:lookup-order'?" in result.output
    fixed = validate(write(tmp_path, "crm:lookup-order"), "--mcp-upstream", upstream, "--strict")
    assert fixed.exit_code == 0, fixed.output


def test_a_catalog_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "catalog.json"
    bad.write_text('{"tools": []}')
    result = validate(write(tmp_path, "flights:book"), "--tool-catalog", bad)
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)  # not a traceback
    assert "is not a valid tool catalog" in result.output
