"""The pytest plugin: one test per task and one for the suite gate, from one run per session,
failing with the run table's reasons; an invalid suite is a collection error."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest

# What the plugin runs on, imported once here: pytester drops the modules an in-process run
# imports, and a second copy beside the first would mix their classes (SQLAlchemy's
# PostgreSQL dialect registers SQL functions once a process: imported again, it warns).
# (Not the plugin itself: -p must import it, to rewrite its asserts.)
import sqlalchemy.dialects.postgresql  # noqa: F401
from click.testing import CliRunner

import openwop_eval.agents.python
import openwop_eval.judges
import openwop_eval.reports.terminal
import openwop_eval.reports.text
import openwop_eval.runner
import openwop_eval.store  # noqa: F401
from openwop_eval.cli.main import main
from tests.gate import booking
from tests.helpers import count_grading

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "pytest"
REFUNDS = ROOT / "examples" / "support-refunds"
TASKS = ["order-status", "opening-hours"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A copy of examples/pytest: its ini enables the plugin and names the careful agent."""
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True)
    return pytester


QUIET = ("-W", "error", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")
"""Every warning an error; no plugins the runs do not need (hypothesis's takes a second)."""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in the project, on a store of its own."""
    store = f"--openwop-store=sqlite:///{pytester.path / 'store.sqlite'}"
    return pytester.runpytest(*QUIET, store, *args)


def junit_cases(path: Path) -> list[tuple[str, str | None, dict[str, str]]]:
    """(name, failure message, properties) of each JUnit test case."""
    return [
        (
            case.attrib["name"],
            None if (failure := case.find("failure")) is None else failure.attrib["message"],
            {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")},
        )
        for case in ET.parse(path).getroot().iter("testcase")
    ]


def test_the_careful_agent_passes_every_task_and_the_gate(project: pytest.Pytester) -> None:
    result = run(project, "-v")
    result.stdout.fnmatch_lines(
        [
            "evals/orders.yaml::order-status PASSED*",
            "evals/orders.yaml::opening-hours PASSED*",
            "evals/orders.yaml::(suite gate) PASSED*",
        ]
    )
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK


def test_the_hasty_agent_fails_its_task_and_the_gate_with_the_run_tables_reasons(
    project: pytest.Pytester,
) -> None:
    result = run(project, "--openwop-agent", "agent.py:hasty_agent")
    result.assert_outcomes(passed=1, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*acme.shop.evals.orders@1.0.0::order-status*",
            "gated score 0.333333 is below passScore 0.8 (score 1)",
            "  #2 step 1 (shop:lookup-order) was never called",
            "  #3 step 1 (shop:lookup-order) was never called",
            "score 1, gated 0.333; run local/*",
            "*acme.shop.evals.orders@1.0.0::(suite gate)*",
            "gated aggregate score 0.666667 is below passScore 0.8 (aggregate score 1)",
            "*order-status * 0.333 * no * #2 step 1 (shop:lookup-order) was never called *",
            "NOT PASSED  aggregate 1, gated 0.667 (pass score 0.8); 1/2 tasks passed; run local/*",
            "FAILED evals/orders.yaml::order-status - Failed: gated score*",
            "FAILED evals/orders.yaml::(suite gate) - Failed: gated aggregate*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_junit_has_one_testcase_per_task_and_one_for_the_gate(project: pytest.Pytester) -> None:
    run(project, "--openwop-agent", "agent.py:hasty_agent", "--junitxml=junit.xml")
    cases = junit_cases(project.path / "junit.xml")
    assert [(name, message is not None) for name, message, _ in cases] == [
        ("order-status", True),
        ("opening-hours", False),
        ("(suite gate)", True),
    ]
    task, _, gate = cases
    assert task[1] is not None
    assert task[1].startswith("Failed: gated score 0.333333 is below passScore 0.8 (score 1)\n")
    assert "  #2 step 1 (shop:lookup-order) was never called\n" in task[1]
    assert task[2]["gatedScore"] == str(1 / 3)
    assert gate[2]["gatedAggregateScore"] == str(2 / 3)
    assert gate[2]["passScore"] == "0.8"
    assert len({props["runId"] for _, _, props in cases}) == 1


def test_the_suite_runs_once_for_all_its_tests_and_writes_the_files_asked_for(
    project: pytest.Pytester,
) -> None:
    result = run(
        project, "--openwop-events=out/{suiteId}.jsonl", "--openwop-summary=out/summary.json"
    )
    result.assert_outcomes(passed=3)
    lines = (project.path / "out" / "acme.shop.evals.orders.jsonl").read_text().splitlines()
    types = [json.loads(line)["type"] for line in lines]
    assert types.count("run.started") == 1
    assert types.count("eval.scored") == len(TASKS) * 3  # every trial once, not per test
    summary = json.loads((project.path / "out" / "summary.json").read_text())
    assert summary["passed"] is True
    assert [t["taskId"] for t in summary["tasks"]] == TASKS
    out = project.path / "out"
    verified = CliRunner().invoke(
        main,
        [
            "verify",
            str(project.path / "evals" / "orders.yaml"),
            str(out / "acme.shop.evals.orders.jsonl"),
            "--summary",
            str(out / "summary.json"),
        ],
    )
    assert verified.exit_code == 0, verified.output  # the command line's own files


def test_an_invalid_suite_is_a_collection_error_naming_each_problem(
    project: pytest.Pytester,
) -> None:
    broken = (EXAMPLE / "evals" / "orders.yaml").read_text()
    broken = broken.replace("count: 3", "count: 2\n  k: 3").replace("contains", "containz", 1)
    (project.path / "evals" / "broken.yaml").write_text(broken)
    result = run(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # nothing ran, like the CLI's exit 2
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting evals/broken.yaml*",
            "evals/broken.yaml:10 $.trials.k error: k is 3 but count is 2*",
            "evals/broken.yaml:17 $.tasks[0].expected.match.strategy error: 'containz' is not"
            " one of: exact, contains, json-match; did you mean 'contains'?",
            "✗ evals/broken.yaml: 2 errors; nothing was run",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_suite_without_an_agent_is_a_collection_error(project: pytest.Pytester) -> None:
    result = run(project, "-o", "openwop_eval_agent=")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["evals/orders.yaml: no agent to run the suite against; give --openwop-agent AGENT*"]
    )


def test_a_suite_named_on_the_command_line_runs_with_the_judge_its_rubric_tasks_need(
    pytester: pytest.Pytester,
) -> None:
    for name in ("suite.yaml", "agent.py", "judge.json"):
        shutil.copy(REFUNDS / name, pytester.path / name)
    given = ("-p", "openwop_eval.pytest_plugin", "suite.yaml")
    agent = "--openwop-agent=agent.py:careful_support_agent"

    judged = run(pytester, *given, agent, "--openwop-judge=scripted:judge.json")
    judged.assert_outcomes(passed=4)

    unjudged = run(pytester, *given, agent)
    assert unjudged.ret == pytest.ExitCode.INTERRUPTED
    unjudged.stdout.fnmatch_lines(
        ["suite.yaml: tasks close-account-request are rubric tasks; choose a judge*"]
    )


def test_suite_tests_declares_a_suite_in_a_test_module_with_its_own_agent(
    project: pytest.Pytester,
) -> None:
    (project.path / "pytest.ini").write_text("[pytest]\n")  # no suite files, no agent
    project.makeconftest('pytest_plugins = ["openwop_eval.pytest_plugin"]')  # the other way in
    project.makepyfile(
        test_orders="""
        from agent import hasty_agent
        from openwop_eval.pytest_plugin import suite_tests

        test_orders = suite_tests("evals/orders.yaml", agent=hasty_agent)
        """
    )
    result = run(project)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "FAILED test_orders.py::test_orders::order-status - *",
            "FAILED test_orders.py::test_orders::(suite gate) - *",
        ]
    )


def test_suite_tests_without_the_plugin_fails_saying_how_to_enable_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_orders="""
        from openwop_eval.pytest_plugin import suite_tests

        test_orders = suite_tests("orders.yaml", agent="agent.py:careful_agent")
        """
    )
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*needs the openwop_eval pytest plugin*"])


def test_the_plugin_is_opt_in(pytester: pytest.Pytester) -> None:
    shutil.copytree(EXAMPLE / "evals", pytester.path / "evals")
    result = pytester.runpytest(*QUIET, "evals/orders.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # no collector for a suite file
    plugins = {e.value for e in metadata.entry_points(group="pytest11")}
    assert not any(value.startswith("openwop_eval") for value in plugins)
    imported = pytester.runpython_c(
        "import sys, openwop_eval; print('openwop_eval.pytest_plugin' in sys.modules)"
    )
    imported.stdout.fnmatch_lines(["False"])


def test_a_run_that_cannot_complete_errors_every_test_of_the_suite(
    project: pytest.Pytester,
) -> None:
    result = run(project, f"--openwop-store=sqlite:///{project.path / 'agent.py' / 'x.sqlite'}")
    result.assert_outcomes(errors=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["the run could not complete: StoreError: cannot open the store at *"] * 3
    )
    assert "Traceback" not in result.stdout.str()


def test_two_suites_writing_one_file_is_a_usage_error(project: pytest.Pytester) -> None:
    second = (EXAMPLE / "evals" / "orders.yaml").read_text().replace("orders", "returns")
    (project.path / "evals" / "returns.yaml").write_text(second)
    result = run(project, "--openwop-summary=summary.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: */summary.json would be written by acme.shop.evals.orders@1.0.0 and by"
            " acme.shop.evals.returns@1.0.0; put {suiteId} in the file name"
        ]
    )
    assert not (project.path / "store.sqlite").exists()  # refused before anything ran


def test_an_option_out_of_range_is_a_usage_error(project: pytest.Pytester) -> None:
    result = run(project, "--openwop-concurrency=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: openwop-eval concurrency must be a positive whole number, not '0'"]
    )


def test_the_report_reads_the_runs_own_grades(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    graded = count_grading(monkeypatch)
    result = run(project, "--openwop-report=out/report.json")
    result.assert_outcomes(passed=3)
    assert len(graded) == len(TASKS) * 3  # every trial once: as it ran, none for the report
    assert set(graded.values()) == {1}
    report = json.loads((project.path / "out" / "report.json").read_text())
    assert sum(len(t["trials"]) for t in report["tasks"]) == len(TASKS) * 3


def test_a_task_the_gate_does_not_require_is_an_expected_failure(
    pytester: pytest.Pytester,
) -> None:
    """The booking scenario: the suite passes on its aggregate while one task fails. pytest
    exits 0 as `run` does, the task an xfail saying why; a policy requiring every task
    makes it a failure and the gate's test fails, exit 1."""
    for name, gate in (("lax.yaml", None), ("strict.yaml", {"requireAllTasks": True})):
        (pytester.path / name).write_text(json.dumps(booking.suite(gate)))
    (pytester.path / "agent.json").write_text(json.dumps(booking.agent()))
    given = ("-p", "openwop_eval.pytest_plugin", "--openwop-agent=scripted:agent.json")

    lax = run(pytester, *given, "lax.yaml", "-rx")
    lax.assert_outcomes(passed=4, xfailed=1)
    assert lax.ret == pytest.ExitCode.OK
    lax.stdout.fnmatch_lines(["*the gate passed without it (requireAllTasks would count it)*"])

    strict = run(pytester, *given, "strict.yaml")
    strict.assert_outcomes(passed=3, failed=2)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["*requireAllTasks: 1 task(s) did not pass: book-cheapest-flight*"])
