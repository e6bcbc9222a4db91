"""An agent on the official TypeScript SDK's client (``node/agent.mjs``, the npm package
``@modelcontextprotocol/sdk``) reaches the trial's servers through ``{mcp_config}`` and is
graded like any other: a good path passes with every call recorded, a skipped step, a
forbidden call and a call no fixture answers fail with the reason in the table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import Result

from tests.mcp_servers.runs import called, run_case

NODE_DIR = Path(__file__).with_name("node")
AGENT = NODE_DIR / "agent.mjs"
NODE = shutil.which("node")

INSTALL = "npm ci --prefix tests/mcp_servers/node"

pytestmark = [
    pytest.mark.skipif(
        NODE is None, reason=f"node is not installed: install Node.js 20+, then run `{INSTALL}`"
    ),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules").is_dir(),
        reason=f"the Node MCP client is not installed: run `{INSTALL}`",
    ),
]


def run(tmp: Path, case: str) -> Result:
    return run_case(tmp, case, f"{NODE} {AGENT} {{mcp_config}}")


def test_a_good_path_over_the_node_client_passes_and_every_call_is_recorded(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, "good")
    assert result.exit_code == 0, result.output
    # 2 trials × (lookup, refund), each under the suite's name of the tool
    assert called(tmp_path, "good") == ["crm:lookup-order", "payments:refund"] * 2


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("skipped-step", "step 1 (crm:lookup-order) was never called"),
        ("forbidden", "called forbidden tool accounts:delete"),
        ("unanswered", "crm:lookup-customer had no fixture response"),
    ],
)
def test_a_wrong_path_over_the_node_client_fails_with_the_reason(
    tmp_path: Path, case: str, reason: str
) -> None:
    result = run(tmp_path, case)
    assert result.exit_code == 1, result.output
    assert reason in result.output
