"""Kill-and-resume of an ``mcp:`` run: a run whose agent reaches its tools over MCP, killed
at a commit (SIGKILL, nothing flushed) and resumed, ends with the summary of the
uninterrupted run, on SQLite and PostgreSQL — the trials' MCP servers, tokens and agent
processes of the dead run are gone, and the resumed run serves its own."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.store import Store
from tests.faults.scenario import check_log
from tests.faults.test_cli_faults import cli, killed
from tests.mcp_servers.refunds import suite

AGENT = Path(__file__).parent.parent / "mcp_servers" / "sdk_agent.py"


def timeless(value: Any) -> Any:
    """A summary without its measured latencies (a process takes the time it takes)."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if "latency" not in k.lower()}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def args(tmp: Path, case: str) -> list[str]:
    doc = suite(case, count=4)
    path = tmp / f"{case}.json"
    path.write_text(json.dumps(doc))
    agent = f"mcp:{sys.executable} {AGENT} {{mcp_config}}"
    return [str(path), "--agent", agent, "--concurrency", "2"]


@pytest.mark.parametrize("case", ["good", "forbidden"])
@pytest.mark.parametrize("fault", ["1:mid", "2:after"])
def test_a_killed_mcp_run_resumes_to_the_uninterrupted_summary(
    tmp_path: Path, database: str, case: str, fault: str
) -> None:
    clean = tmp_path / "clean.json"
    ran = cli(
        *args(tmp_path, case), "--store", f"sqlite:///{tmp_path}/clean.db", "--out", str(clean)
    )
    assert ran.exit_code == (0 if case == "good" else 1), ran.output
    assert killed(*args(tmp_path, case), "--store", database, fault=fault) == signal.SIGKILL
    store = Store(database)
    try:
        (run,) = store.list_runs()
        assert run.status == "running"
        out = tmp_path / "resumed.json"
        resumed = cli("--resume", run.run_id, "--store", database, "--out", str(out))
        assert resumed.exit_code == ran.exit_code, resumed.output
        expected = timeless(json.loads(clean.read_text()))
        assert timeless(json.loads(out.read_text())) == expected
        check_log(store.events(run.run_id), (f"refund-{case}",), trials=4)
    finally:
        store.close()
