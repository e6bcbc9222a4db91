"""A run killed in the middle of a conversation (between two of its turns) resumes to the
summary an uninterrupted run gives: the broken conversation is played again whole, never
graded on the turns it had."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from openwop_eval.log.replay import conversations
from openwop_eval.store import Store
from tests.conversations.suites import TASK, suite
from tests.runner.conftest import write
from tests.runner.test_resume import cli

AGENT = """
import os, signal
from openwop_eval.agents import AgentReply

def agent(messages, tools):
    return AgentReply(output=turn(messages, tools), latency_ms=10)

def turn(messages, tools):
    trial = tools.context.trial
    turn = tools.context.turn
    if turn == 0:
        booking = tools.call("bookings:get", {"flight": "AB123"})
        tools.call("flights:search", {"from": booking["flight"]})
        return "I can offer AB200 at 09:00."
    marker = os.environ.get("KILL_MARKER")
    if f"{trial}:{turn}" == os.environ.get("KILL_AT") and marker and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)   # mid-conversation, like a crash
    if turn == 1:
        tools.call("bookings:rebook", {"flight": "AB200"})
        if trial == 2:   # one conversation goes wrong late
            tools.call("payments:charge", {"amount": 50})
        return "Done, rebooked."
    return "You're welcome, you are rebooked."
"""


def _suite() -> dict[str, Any]:
    second = copy.deepcopy(TASK)
    second["taskId"] = "rebook-again"
    return suite(TASK, trials={"count": 3, "passRule": "mean"}) | {
        "tasks": [copy.deepcopy(TASK), second],
        "thresholds": {"passScore": 0.9},
    }


def test_a_run_killed_mid_conversation_resumes_to_the_uninterrupted_summary(
    tmp_path: Path,
) -> None:
    suite_path = write(tmp_path / "suite.json", _suite())
    agent = write(tmp_path / "agent.py", AGENT)
    common = [str(suite_path), "--agent", f"{agent}:agent", "--concurrency", "1"]

    clean_url = f"sqlite:///{tmp_path / 'clean.sqlite'}"
    clean = cli(*common, "--store", clean_url, "--out", str(tmp_path / "clean.json"))
    assert clean.returncode == 1, clean.stderr
    expected = json.loads((tmp_path / "clean.json").read_text())
    assert [t["gatedScore"] for t in expected["tasks"]] == [2 / 3, 2 / 3]

    url = f"sqlite:///{tmp_path / 'killed.sqlite'}"
    env = {"KILL_AT": "1:1", "KILL_MARKER": str(tmp_path / "killed")}
    killed = cli(*common, "--store", url, env=env)
    assert killed.returncode == -9
    store = Store(url)
    (run,) = store.list_runs()
    assert run.status == "running"

    resumed = cli(
        "--resume",
        run.run_id,
        "--store",
        url,
        "--out",
        str(tmp_path / "r.json"),
        "--events",
        str(tmp_path / "events.jsonl"),
        env=env,
    )
    assert resumed.returncode == 1, resumed.stderr
    assert json.loads((tmp_path / "r.json").read_text()) == expected
    log = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    scored = sorted(
        (e["payload"]["taskId"], e["payload"]["x-openwop-eval"]["trial"])
        for e in log
        if e["type"] == "eval.scored"
    )
    assert scored == sorted(
        (t, i) for t in ("rebook-after-cancellation", "rebook-again") for i in range(3)
    )
    # every conversation in the log is whole: three user messages, three replies
    per_trial: dict[str, list[str]] = {}
    for e in log:
        if e["type"] == "agent.message":
            per_trial.setdefault(e["payload"]["x-openwop-eval"]["invocationId"], []).append(
                e["payload"]["role"]
            )
    assert all(roles == ["user", "assistant"] * 3 for roles in per_trial.values())
    assert len(per_trial) == 6
    read_back = conversations(log)  # what verify --html shows: each trial's, once
    assert sorted(read_back) == scored
    assert all(
        [m["role"] for m in said] == ["user", "assistant"] * 3 for said in read_back.values()
    )
