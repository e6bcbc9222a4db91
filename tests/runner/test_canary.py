"""Content never leaves the agent's own events: a canary planted in every place content can
enter a run — input, output, tool arguments, fixture responses, rubric text, the judge's
rationale, an agent's error, the memory seed — appears in no ``eval.*`` or ``run.*`` event
and not in the summary; in the ``agent.*`` events only where the protocol carries content."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.runner.conftest import Ran, write

CANARY = "canary-5d1e0b"

AGENT = f"""
async def agent(input, tools):
    assert tools.memory, "the memory seed reaches the agent"
    if input["mode"] == "raise":
        raise RuntimeError("the provider said {CANARY}")
    found = await tools.call("crm:lookup", {{"q": "{CANARY}"}})
    return "answer " + found["note"]
"""

CONTENT_FIELDS = {"inputs", "outcome"}
"""The ``agent.*`` payload members that carry content by protocol (tool arguments and
results); everything else in an agent event is an id, a name, a status or a number."""


def suite() -> dict[str, Any]:
    fixtures = {
        "toolResponses": [{"tool": "crm:lookup", "response": {"note": CANARY}}],
        "memorySeed": [{"role": "user", "content": CANARY}],
    }

    def task(task_id: str, mode: str, expected: dict[str, Any]) -> dict[str, Any]:
        return {
            "taskId": task_id,
            "input": {"mode": mode, "text": CANARY},
            "expected": expected,
            "fixtures": fixtures,
        }

    golden = {"kind": "golden", "match": {"strategy": "contains", "value": CANARY}}
    rubric = {"kind": "rubric", "rubric": [{"criterion": f"mentions {CANARY}", "weight": 1}]}
    return {
        "suiteId": "test.openwop.evals.canary",
        "version": "1.0.0",
        "modes": ["golden", "rubric"],
        "trials": {"count": 2},
        "tasks": [
            task("golden", "answer", golden),
            task("rubric", "answer", rubric),
            task("raises", "raise", golden),
        ],
    }


def test_the_canary_stays_in_the_agent_events(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    judge = {"default": [{"met": [1], "rationales": [f"it says {CANARY}"]}]}
    ran = run_cli(
        str(write(tmp_path / "suite.json", suite())),
        "--agent",
        f"{write(tmp_path / 'agent.py', AGENT)}:agent",
        "--judge",
        f"scripted:{write(tmp_path / 'judge.json', judge)}",
    )
    assert ran.exit_code == 1, ran.stderr  # the raising task fails; the others pass
    assert ran.summary is not None
    assert CANARY not in json.dumps(ran.summary)
    for event in ran.events:
        if event["type"].startswith(("eval.", "run.")):
            assert CANARY not in json.dumps(event), event["type"]
        else:
            bare = {k: v for k, v in event["payload"].items() if k not in CONTENT_FIELDS}
            assert CANARY not in json.dumps({**event, "payload": bare}), event["type"]
    # The canary did travel: it is in the local report, where content belongs.
    assert ran.report is not None
    report = json.dumps(ran.report)
    assert f"answer {CANARY}" in report
    assert f"the provider said {CANARY}" in report
    assert f"it says {CANARY}" in report
