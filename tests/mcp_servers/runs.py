"""Running a refunds case (``refunds.py``) through the command line with an ``mcp:`` agent,
and reading back the tool events it recorded."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from openwop_eval.cli.main import main
from tests.mcp_servers.refunds import suite


def run_case(tmp: Path, case: str, command: str, *options: str) -> Result:
    """``openwop-eval run`` of ``case``'s suite with ``--agent 'mcp:COMMAND'``; its events
    go to ``tmp/CASE.jsonl``."""
    path = tmp / f"{case}.json"
    path.write_text(json.dumps(suite(case)))
    argv = ["run", str(path), "--agent", f"mcp:{command}", "--store", f"sqlite:///{tmp}/s.db"]
    return CliRunner().invoke(main, [*argv, "--events", str(tmp / f"{case}.jsonl"), *options])


def calls(tmp: Path, case: str) -> list[tuple[str, str]]:
    """(type, tool) of the tool events the run recorded, in order."""
    docs = [json.loads(line) for line in (tmp / f"{case}.jsonl").read_text().splitlines()]
    return [
        (d["type"], d["payload"].get("tool", d["payload"].get("toolName", "")))
        for d in docs
        if d["type"].startswith("agent.tool")
    ]


def called(tmp: Path, case: str) -> list[str]:
    """The tools of the run's ``agent.tool-called`` events, in order."""
    return [tool for kind, tool in calls(tmp, case) if kind == "agent.tool-called"]
