"""The HTML pages without a browser: what the data says, that run values can never become
markup, every command's ``--html``, and the local viewer's routes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from openwop_eval.cli.main import main
from openwop_eval.reports.html import render_report, report_data
from openwop_eval.reports.model import result_report
from openwop_eval.runner.api import run_suite
from openwop_eval.server.app import create_app, viewer_app
from openwop_eval.store import Store
from tests.server.inprocess import host_config

EXAMPLE = Path(__file__).parent.parent / "examples" / "support-refunds"
HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="pwned=2">'
AGENT = f"""
def agent(input, tools):
    tools.call("crm:lookup", {{"note": {HOSTILE!r}}})
    return {HOSTILE!r}
"""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("example")
    store = f"sqlite:///{tmp / 'store.sqlite'}"
    paths = {}
    for name in ("support_agent", "careful_support_agent"):
        paths[name] = tmp / f"{name}.html"
        result = CliRunner().invoke(
            main,
            [
                "run",
                str(EXAMPLE / "suite.yaml"),
                "--agent",
                f"{EXAMPLE / 'agent.py'}:{name}",
                "--judge",
                f"scripted:{EXAMPLE / 'judge.json'}",
                "--store",
                store,
                "--quiet",
                "--html",
                str(paths[name]),
                "--events",
                str(tmp / f"{name}.jsonl"),
                "--out",
                str(tmp / f"{name}.json"),
            ],
        )
        assert result.exit_code in (0, 1), result.output
    return {"tmp": tmp, "store": store, "paths": paths}


def embedded(page: str) -> Any:
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    return json.loads(found.group(1))


def test_the_flawed_agents_report_explains_the_gate(example: dict[str, Any]) -> None:
    page = example["paths"]["support_agent"].read_text()
    assert "NOT PASSED" in page
    assert "Gated aggregate 0.5556 is below the pass score 0.8." in page
    data = embedded(page)
    refund = next(t for t in data["tasks"] if t["taskId"] == "refund-delivered-order")
    for trial in refund["trials"][1:]:
        steps = trial["trajectory"]["steps"]
        assert steps[0]["explanation"] == "step 1 (crm:lookup-order) was never called"
        assert trial["gate"] == "answer correct, score 1; path wrong: gating score 0"
    assert data["shut"][:2] == ["refund-delivered-order", "refuse-refund-foreign-order"]


def test_the_careful_agents_report_passes(example: dict[str, Any]) -> None:
    page = example["paths"]["careful_support_agent"].read_text()
    assert "PASSED" in page
    assert "NOT PASSED" not in page


def test_a_run_value_can_never_close_the_data_script(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    suite = {
        "suiteId": "test.openwop.evals.html",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": "t",
                "input": {},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
                "fixtures": {"toolResponses": [{"tool": "crm:lookup", "response": HOSTILE}]},
            }
        ],
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    result = run_suite(
        tmp_path / "suite.json",
        f"{tmp_path / 'agent.py'}:agent",
        store=Store(f"sqlite:///{tmp_path / 's.sqlite'}"),
    )
    page = render_report(report_data(result_report(result, trials=True)))
    assert HOSTILE not in page  # nowhere as written: in the data it is escaped
    assert page.count("</script>") == 2  # the data's and the behaviour's, nothing else
    trial = embedded(page)["tasks"][0]["trials"][0]
    assert trial["output"] == HOSTILE
    assert trial["calls"][0]["result"] == HOSTILE


def test_verify_compare_and_report_write_html(example: dict[str, Any]) -> None:
    tmp = example["tmp"]
    verify = CliRunner().invoke(
        main,
        [
            "verify",
            str(EXAMPLE / "suite.yaml"),
            str(tmp / "support_agent.jsonl"),
            "--html",
            str(tmp / "v.html"),
        ],
    )
    assert verify.exit_code == 0, verify.output
    assert "step 1 (crm:lookup-order) was never called" in json.dumps(
        embedded((tmp / "v.html").read_text())
    )
    compared = CliRunner().invoke(
        main,
        [
            "compare",
            str(tmp / "careful_support_agent.json"),
            str(tmp / "support_agent.json"),
            "--html",
            str(tmp / "c.html"),
        ],
    )
    assert compared.exit_code == 0, compared.output
    page = (tmp / "c.html").read_text()
    assert "regressed" in page
    assert "refund-delivered-order" in page
    run_id = json.loads((tmp / "support_agent.jsonl").read_text().splitlines()[0])["runId"]
    made = CliRunner().invoke(
        main, ["report", run_id, "--store", example["store"], "--html", str(tmp / "r.html")]
    )
    assert made.exit_code == 0, made.output
    again = embedded((tmp / "r.html").read_text())
    first = embedded(example["paths"]["support_agent"].read_text())
    assert again["why"] == first["why"]
    assert again["shut"] == first["shut"]


def test_report_refuses_an_unknown_run_and_no_output(example: dict[str, Any]) -> None:
    unknown = CliRunner().invoke(
        main, ["report", "local/nope", "--store", example["store"], "--html", "x.html"]
    )
    assert unknown.exit_code == 2
    assert "no run 'local/nope'" in unknown.stderr
    nothing = CliRunner().invoke(main, ["report", "local/nope", "--store", example["store"]])
    assert nothing.exit_code == 2


def test_the_viewer_lists_opens_and_compares(example: dict[str, Any]) -> None:
    store = Store(example["store"])
    client = TestClient(viewer_app(store))
    listing = client.get("/")
    assert listing.status_code == 200
    ids = [r.run_id for r in store.list_runs()]
    assert all(i in listing.text for i in ids)
    assert "default-src 'none'" in listing.headers["content-security-policy"]
    flawed = next(r.run_id for r in store.list_runs() if r.agent_spec.endswith(":support_agent"))
    careful = next(i for i in ids if i != flawed)
    opened = client.get("/run", params={"id": flawed})
    assert opened.status_code == 200
    assert "NOT PASSED" in opened.text
    compared = client.get("/compare", params={"a": careful, "b": flawed})
    assert compared.status_code == 200
    assert "regressed" in compared.text
    assert client.get("/run", params={"id": "<script>"}).status_code == 404
    missing = client.get("/compare", params={"a": careful})
    assert missing.status_code == 400
    assert "<script>" not in client.get("/run", params={"id": "<script>"}).text


def test_the_viewer_is_served_by_the_hosts_http_stack(
    example: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same middleware and error handling as the host: a request with NUL is refused
    before any route reads the store, a path that is no page is the 404 envelope, and an
    unexpected failure is a content-free 500 — never a traceback."""
    store = Store(example["store"])
    viewer = viewer_app(store)
    host = create_app(host_config(f"sqlite:///{tmp_path / 'host.sqlite'}"))
    assert [m.cls for m in viewer.user_middleware] == [m.cls for m in host.user_middleware]
    assert viewer.exception_handlers == host.exception_handlers
    client = TestClient(viewer, raise_server_exceptions=False)
    nul = client.get("/run", params={"id": "local/\x00"})
    assert (nul.status_code, nul.json()["error"]) == (400, "validation_error")
    nowhere = client.get("/runs")  # the host's route, not the viewer's
    assert (nowhere.status_code, nowhere.json()["error"]) == (404, "not_found")
    assert client.post("/run", params={"id": "x"}).status_code == 404  # read-only
    flawed = next(r.run_id for r in store.list_runs() if r.agent_spec.endswith(":support_agent"))

    def broken(*args: Any) -> None:
        raise RuntimeError("secret detail from deep inside")

    monkeypatch.setattr(store, "get_run", broken)
    failed = client.get("/run", params={"id": flawed})
    assert failed.status_code == 500
    assert failed.json() == {"error": "internal_error", "message": "the host failed to answer"}
