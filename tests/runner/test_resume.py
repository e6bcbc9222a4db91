"""A run killed mid-way keeps its finished trials, and resuming it yields the summary an
uninterrupted run would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from openwop_eval.store import Store
from tests.runner.conftest import write

AGENT = """
import os, signal
from openwop_eval.agents import AgentReply

def agent(input, tools):
    task, trial = input["task"], tools.context.trial
    tools.call("crm:lookup", {"task": task})
    marker = os.environ.get("KILL_MARKER")
    if f"{task}:{trial}" == os.environ.get("KILL_AT") and marker and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)   # no cleanup, no flush: like a crash
    if task == "c" and trial == 2:
        tools.call("accounts:delete", {})
    return AgentReply(output="done", cost_usd=0.01, latency_ms=10 * (trial + 1))
"""


def suite() -> dict[str, Any]:
    def task(name: str) -> dict[str, Any]:
        return {
            "taskId": name,
            "input": {"task": name},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "done"},
                "trajectory": {"steps": [{"tool": "crm:lookup"}], "forbidden": ["accounts:delete"]},
            },
            "fixtures": {
                "toolResponses": [
                    {"tool": "crm:lookup", "response": {}},
                    {"tool": "accounts:delete", "response": {}},
                ]
            },
        }

    return {
        "suiteId": "test.openwop.evals.resume",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.9},
        "trials": {"count": 3, "passRule": "mean"},
        "tasks": [task("a"), task("b"), task("c")],
    }


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openwop_eval", "run", *args, "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def test_killed_run_resumes_to_the_uninterrupted_summary(tmp_path: Path) -> None:
    suite_path = write(tmp_path / "suite.json", suite())
    agent = write(tmp_path / "agent.py", AGENT)
    common = [str(suite_path), "--agent", f"{agent}:agent", "--concurrency", "1"]

    clean_url = f"sqlite:///{tmp_path / 'clean.sqlite'}"
    clean = cli(*common, "--store", clean_url, "--out", str(tmp_path / "clean.json"))
    assert clean.returncode == 1, clean.stderr
    expected = json.loads((tmp_path / "clean.json").read_text())

    url = f"sqlite:///{tmp_path / 'killed.sqlite'}"
    env = {"KILL_AT": "b:1", "KILL_MARKER": str(tmp_path / "killed")}
    killed = cli(*common, "--store", url, env=env)
    assert killed.returncode == -9
    store = Store(url)
    (run,) = store.list_runs()
    assert run.status == "running"
    scored = [e for e in store.events(run.run_id) if e["type"] == "eval.scored"]
    # Trial 0 of a, b, c and trial 1 of a finished before the kill; the committer's thread
    # may not have committed them all yet (it commits what finished within 20 ms at once):
    # those are run again on resume.
    assert len(scored) <= 4

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
    keys = [
        (e["payload"]["taskId"], e["payload"]["x-openwop-eval"]["trial"])
        for e in log
        if e["type"] == "eval.scored"
    ]
    assert sorted(keys) == sorted({(t, i) for t in "abc" for i in range(3)})  # none twice
    assert [e["sequence"] for e in log] == list(range(len(log)))
    assert Store(url).get_run(run.run_id).status == "completed"  # type: ignore[union-attr]


def test_resume_refuses_a_finished_run(tmp_path: Path) -> None:
    suite_path = write(tmp_path / "suite.json", suite())
    agent = write(tmp_path / "agent.py", AGENT)
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    cli(str(suite_path), "--agent", f"{agent}:agent", "--store", url)
    (run,) = Store(url).list_runs()
    again = cli("--resume", run.run_id, "--store", url)
    assert again.returncode == 2
    assert "already completed" in again.stderr
