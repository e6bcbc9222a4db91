"""Re-running the legs live against the host a bundle names, beside the signed rows."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.conformance import witness
from openwop_eval.conformance.harness import LEGS, ConformanceResult, LegResult
from openwop_eval.conformance.rerun import RerunError, compare, host_of, rerun
from tests.conformance.doubles import double_app, recorded_runs, serving
from tests.hosts import _free_port


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return recorded_runs(tmp_path_factory.mktemp("runs"))


def signed(url: str, results: dict[str, str]) -> dict[str, Any]:
    rows = [{"id": i, "scenario": "s", "result": r, "assertions": 1} for i, r in results.items()]
    return {"discovery": {"url": url + "/.well-known/openwop"}, "results": {"requirements": rows}}


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:3838/.well-known/openwop", "http://127.0.0.1:3838"),
        ("https://evals.example/api/.well-known/openwop", "https://evals.example/api"),
        ("http://h:1/", "http://h:1"),
    ],
)
def test_the_host_is_the_discovery_url_without_its_path(url: str, base: str) -> None:
    assert host_of({"discovery": {"url": url}}) == base


@pytest.mark.parametrize(
    "bundle",
    [{}, {"discovery": None}, {"discovery": {"url": 7}}, {"discovery": {"url": "file:///etc/x"}}],
)
def test_a_bundle_that_names_no_host_is_refused(bundle: dict[str, Any]) -> None:
    with pytest.raises(RerunError):
        host_of(bundle)


def test_compare_keeps_unsigned_and_unimplemented_apart() -> None:
    live = ConformanceResult("h", None, [LegResult(leg, "executed-pass", None, []) for leg in LEGS])
    rows = [
        {"id": witness.SUITE_GATED, "result": "executed-fail"},
        {"id": "openwop.requirement.0246.something-else", "result": "executed-pass"},
        {"id": "openwop.scenario.other", "result": "executed-fail"},  # not an 0246 row
        {"id": witness.SUITE_GATED, "result": "executed-pass"},  # a duplicate: the first counts
    ]
    got = {c.id: c for c in compare(rows, live)}
    assert set(got) == {*LEGS, "openwop.requirement.0246.something-else"}
    assert not got[witness.SUITE_GATED].agrees
    assert got["openwop.requirement.0246.something-else"].live is None
    assert got["openwop.requirement.0246.something-else"].agrees
    assert got[witness.MEAN_GATED].signed is None
    assert got[witness.MEAN_GATED].agrees


def test_a_rerun_agrees_with_a_true_bundle(runs: dict[str, Any]) -> None:
    with serving(double_app(runs), _free_port()) as url:
        result = rerun(signed(url, dict.fromkeys(LEGS, "executed-pass")), "dev-key")
    assert result.unreachable is None
    assert [c.live for c in result.rows] == ["executed-pass"] * 3
    assert result.disagreements == []


def test_a_rerun_catches_a_host_that_no_longer_holds_what_it_signed(
    runs: dict[str, Any],
) -> None:
    def ungated(fixture: str, events: list[dict[str, Any]], summary: dict[str, Any]) -> None:
        if fixture == witness.SUITE_FIXTURE:
            summary["passed"] = True

    with serving(double_app(runs, ungated), _free_port()) as url:
        result = rerun(signed(url, dict.fromkeys(LEGS, "executed-pass")), "dev-key")
    (wrong,) = result.disagreements
    assert (wrong.id, wrong.signed, wrong.live) == (
        witness.SUITE_GATED,
        "executed-pass",
        "executed-fail",
    )
    assert wrong.detail
    assert "suite passed" in wrong.detail


def test_a_rerun_of_an_unreachable_host_says_so() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = rerun(signed(url, dict.fromkeys(LEGS, "executed-pass")), "dev-key")
    assert result.unreachable
    assert "discovery failed" in result.unreachable
    assert result.rows == []
