"""`openwop-eval conformance URL`: three passes against our host; the right leg fails
against each broken double, naming the assertion and the observed value; a host without
`agents.evalSuite` is inapplicable everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from starlette.applications import Starlette

from openwop_eval.cli.main import main
from openwop_eval.conformance import witness
from openwop_eval.conformance.harness import Harness
from tests.asgi import client
from tests.conformance.doubles import Mutation, double_app, recorded_runs, serving
from tests.hosts import Host, _free_port

MEAN, SUITE = witness.MEAN_FIXTURE, witness.SUITE_FIXTURE


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return recorded_runs(tmp_path_factory.mktemp("runs"))


def conformance(url: str, tmp: Path, key: str = "dev-key") -> tuple[Result, dict[str, Any]]:
    out = tmp / "result.json"
    result = CliRunner().invoke(main, ["conformance", url, "--api-key", key, "--json", str(out)])
    return result, json.loads(out.read_text()) if out.exists() else {}


def audit(app: Starlette) -> dict[str, Any]:
    """The harness's result against a double served in this process, in the CLI's JSON."""
    harness = Harness("http://double", "dev-key", client=client(app))
    try:
        return harness.run().as_dict()
    finally:
        harness.close()


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {leg["leg"]: leg["result"] for leg in report["legs"]}


def failed(report: dict[str, Any], leg: str) -> dict[str, Any]:
    (found,) = [entry for entry in report["legs"] if entry["leg"] == leg]
    return {a["name"]: a["observed"] for a in found["assertions"] if not a["passed"]}


def test_our_host_passes_all_three_legs(host: Host, tmp_path: Path) -> None:
    result, report = conformance(host.url, tmp_path, "acme-key")
    assert result.exit_code == 0, result.output
    assert verdicts(report) == {
        witness.MEAN_GATED: "executed-pass",
        witness.SUITE_GATED: "executed-pass",
        witness.GATED_FIELDS_SHAPE: "executed-pass",
    }
    assert report["host"] == host.url
    assert len(report["discoveryDigest"]) == 64
    assert "no leg failed" in result.output


def ungated_mean(fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """An RFC 0244 host: the mean rule reads meanScore, and no gated fields exist."""
    if fixture == MEAN:
        summary["tasks"][0]["passed"] = True
        summary["tasks"][0].pop("gatedScore")
        summary.pop("gatedAggregateScore")
        summary.update(passed=True, passedCount=1)


def ungated_suite(fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    if fixture == SUITE:
        summary["passed"] = True
        summary.pop("gatedAggregateScore")


def zeroed_score(fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """ "Fixes" the gate by zeroing the reported score, which §C forbids."""
    for event in events:
        if event["type"] == "eval.scored" and not event["payload"]["passed"]:
            event["payload"]["score"] = 0.0
    for task in summary["tasks"]:
        if task.get("gatedScore") == 0:
            task["score"] = 0.0
            if "trials" in task:
                task["trials"]["meanScore"] = 0.0
    summary["aggregateScore"] = sum(t["score"] for t in summary["tasks"]) / len(summary["tasks"])


def missing_gated_on_matched(
    fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]
) -> None:
    if fixture == SUITE:
        summary["tasks"][0].pop("gatedScore")


def gated_out_of_range(fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    if fixture == SUITE:
        summary["gatedAggregateScore"] = 1.5


@pytest.mark.parametrize(
    ("mutate", "leg", "assertion", "observed"),
    [
        (ungated_mean, witness.MEAN_GATED, "task gatedScore", "<absent>"),
        (ungated_mean, witness.MEAN_GATED, "task passed", True),
        (ungated_suite, witness.SUITE_GATED, "suite passed", True),
        (zeroed_score, witness.MEAN_GATED, "eval.scored[0].score is the output score", 0.0),
        (zeroed_score, witness.SUITE_GATED, "aggregateScore is unchanged", 0.5),
        (
            missing_gated_on_matched,
            witness.SUITE_GATED,
            "matched task gatedScore equals its score",
            "<absent>",
        ),
        (
            gated_out_of_range,
            witness.GATED_FIELDS_SHAPE,
            "summary validates against eval-summary.schema.json",
            ["1.5 is greater than the maximum of 1"],
        ),
    ],
)
def test_each_broken_host_fails_the_right_leg(
    runs: dict[str, Any], mutate: Mutation, leg: str, assertion: str, observed: Any
) -> None:
    report = audit(double_app(runs, mutate))
    assert report["passed"] is False
    assert verdicts(report)[leg] == "executed-fail"
    assert failed(report, leg)[assertion] == observed


def test_a_broken_host_over_http_exits_one_and_names_the_assertion(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    with serving(double_app(runs, ungated_suite), _free_port()) as url:
        result, report = conformance(url, tmp_path)
    assert result.exit_code == 1
    assert verdicts(report)[witness.SUITE_GATED] == "executed-fail"
    assert "suite passed" in result.output


def test_an_unmodified_double_passes(runs: dict[str, Any]) -> None:
    """The doubles serve our own host's real output: only their defect makes a leg fail."""
    report = audit(double_app(runs))
    assert report["passed"] is True
    assert set(verdicts(report).values()) == {"executed-pass"}


def test_a_summary_that_disagrees_with_its_log_fails(runs: dict[str, Any], tmp_path: Path) -> None:
    def lie(fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]) -> None:
        if fixture == SUITE:  # the summary says what the witness wants, the log says otherwise
            for event in events:
                if event["type"] == "agent.tool-called" and "A-100" in json.dumps(event):
                    event["payload"]["toolName"] = "accounts:delete"

    report = audit(double_app(runs, lie))
    assert report["passed"] is False
    broken = failed(report, witness.SUITE_GATED)
    assert "the summary agrees with the verdict recomputed from the event log" in broken


def test_a_host_without_the_capability_is_inapplicable(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    report = audit(double_app(runs, eval_suite=False))
    assert report["passed"] is True
    assert set(verdicts(report).values()) == {"inapplicable"}
    assert all("agents.evalSuite" in leg["reason"] for leg in report["legs"])


def test_an_unreachable_host_exits_three(tmp_path: Path) -> None:
    result, _ = conformance(f"http://127.0.0.1:{_free_port()}", tmp_path)
    assert result.exit_code == 3
