"""What an agent sends is bounded per trial: an output, a call's arguments, a live tool's
result and the trial's total over their limits (limits.py) are trial errors, refused before
they are stored or graded, so the store does not grow by them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.runner.conftest import Ran, write

BIG = 20 * 1024 * 1024  # 20 MB, five times the largest single limit

AGENTS = {
    "output": f"""
async def agent(input, tools):
    return "x" * {BIG}
""",
    "arguments": f"""
async def agent(input, tools):
    await tools.call("crm:lookup", {{"blob": "x" * {BIG}}})
    return "done"
""",
    # the agent catches the refusal and answers as if nothing happened: still an error
    "arguments-caught": f"""
def agent(input, tools):
    try:
        tools.call("crm:lookup", {{"blob": "x" * {BIG}}})
    except Exception:
        pass
    return "done"
""",
    "result": """
async def agent(input, tools):
    await tools.call("big:read", {})
    return "done"
""",
    "total": f"""
async def agent(input, tools):
    for _ in range(20):  # each call under the per-call limit, together over the trial's
        await tools.call("crm:lookup", {{"blob": "x" * {1024 * 1024 - 100}}})
    return "done"
""",
}

KINDS = {
    "output": "output-too-large",
    "arguments": "tool-arguments-too-large",
    "arguments-caught": "tool-arguments-too-large",
    "result": "tool-result-too-large",
    "total": "trial-content-too-large",
}

TOOLS = f"""
TOOLS = {{"big:read": lambda args: "y" * {BIG}, "crm:lookup": lambda args: {{"ok": True}}}}
"""


def _store_bytes(store_url: str) -> int:
    path = Path(store_url.removeprefix("sqlite:///"))
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


@pytest.mark.parametrize("case", sorted(AGENTS))
def test_content_over_a_limit_is_a_trial_error_and_is_never_stored(
    case: str, tmp_path: Path, store_url: str, run_cli: Callable[..., Ran]
) -> None:
    suite = write(
        tmp_path / "s.json",
        {
            "suiteId": "test.openwop.evals.limits",
            "version": "1.0.0",
            "modes": ["live-shadow"],
            "thresholds": {"passScore": 1},
            "tasks": [
                {
                    "taskId": "t",
                    "input": {},
                    "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "done"}},
                }
            ],
        },
    )
    agent = write(tmp_path / "a.py", AGENTS[case])
    tools = write(tmp_path / "tools.py", TOOLS)
    ran = run_cli(str(suite), "--agent", f"{agent}:agent", "--tools", str(tools), "--live-shadow")
    assert ran.exit_code == 1, ran.stderr + ran.output
    assert ran.summary is not None
    assert ran.summary["passed"] is False
    completed = [e for e in ran.events if e["type"] == "agent.invocation-completed"]
    assert [c["payload"]["outcome"] for c in completed] == ["failed"]
    assert completed[0]["payload"]["x-openwop-eval"]["error"] == KINDS[case]
    assert [(s["score"], s["passed"]) for s in ran.scored()] == [(0.0, False)]
    assert ran.report is not None
    trial = ran.report["tasks"][0]["trials"][0]
    assert "limit" in trial["error"]
    assert len(trial["error"]) < 2_000
    # neither the events file nor the store holds the 20 MB; a trial's calls up to its
    # 16 Mi total are kept (in its events and its diagnostics), not one call past it
    mib = 1024 * 1024
    events_limit, store_limit = (1 * mib, 4 * mib) if case != "total" else (17 * mib, 40 * mib)
    assert (ran.dir / "events.jsonl").stat().st_size < events_limit
    assert _store_bytes(store_url) < store_limit
