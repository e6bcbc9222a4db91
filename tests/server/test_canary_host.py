"""Through the host, too, content stays in the agent's own events: a canary planted in every
place content can enter a run appears in no host response — run, list, summary, deployment
refusal, discovery — and in the event stream only in ``agent.*`` content members."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from openwop_client.wire_id import project_id

from openwop_eval.server.config import AgentConfig
from tests.runner.test_canary import AGENT, CANARY, CONTENT_FIELDS, suite
from tests.server.inprocess import AppHost


def _canary_agent(tmp: Path) -> dict[str, Any]:
    """``host_config`` arguments that add the canary suite and its agent and judge."""
    (tmp / "suites").mkdir()
    (tmp / "suites" / "canary.json").write_text(json.dumps(suite()))
    (tmp / "agent.py").write_text(AGENT)
    judge = {"default": [{"met": [1], "rationales": [f"it says {CANARY}"]}]}
    (tmp / "judge.json").write_text(json.dumps(judge))
    agent = AgentConfig(agent=f"{tmp / 'agent.py'}:agent", judge=f"scripted:{tmp / 'judge.json'}")
    return {"suites": (str(tmp / "suites"),), "agents": {"test.canary": agent}}


def test_no_host_response_carries_the_canary(
    tmp_path: Path, make_app: Callable[..., AppHost]
) -> None:
    host = make_app(**_canary_agent(tmp_path))
    seen: list[httpx.Response] = []
    with host.client() as c:
        body = {
            "mode": "eval",
            "evalSuiteRef": "test.openwop.evals.canary@1.0.0",
            "agentId": "test.canary",
        }
        created = c.post("/runs", json=body)
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        path = f"/runs/{project_id(run_id)}"
        host.follow(run_id)
        assert c.get(path).json()["status"] == "completed"
        seen += [created, c.get(path), c.get("/runs"), c.get(f"{path}/eval-summary")]
        seen += [c.get("/.well-known/openwop"), c.get("/agents"), c.get("/agents/test.canary")]
        promote = {
            "version": "1.0.0",
            "transition": "promote",
            "toState": "active",
            "channel": "stable",
            "evalRunId": run_id,
        }
        refused = c.post("/agents/test.canary/deployments", json=promote)
        assert refused.status_code == 422  # the raising task failed the suite
        seen += [refused, c.get("/agents/test.canary/deployments")]
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
    for response in seen:
        assert CANARY not in response.text, response.request.url
    assert events
    for event in events:
        if event["type"].startswith(("eval.", "run.")):
            assert CANARY not in json.dumps(event), event["type"]
        else:
            bare = {k: v for k, v in event["payload"].items() if k not in CONTENT_FIELDS}
            assert CANARY not in json.dumps({**event, "payload": bare}), event["type"]
    assert any(CANARY in json.dumps(e["payload"].get("outcome")) for e in events)
