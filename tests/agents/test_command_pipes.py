"""A subprocess agent's verdict does not depend on whether its exit beat the runner's write.

The runner writes to the agent's stdin while the agent may already have exited. Which comes
first is a race between two processes; these tests fix the order with a stand-in process so
that both orders are checked on every run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from openwop_eval.agents import command
from openwop_eval.agents.base import AgentProtocolError, TrialContext
from openwop_eval.agents.command import CommandAgent


class _Stdin:
    def __init__(self, open_for: int) -> None:
        self.open_for = open_for
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines.append(data)

    async def drain(self) -> None:
        if len(self.lines) > self.open_for:
            raise BrokenPipeError


class _Process:
    """Writes ``lines`` on stdout, then EOF; its stdin takes ``open_for`` messages."""

    def __init__(self, lines: list[bytes], open_for: int) -> None:
        self.stdin = _Stdin(open_for)
        self.stdout = asyncio.StreamReader()
        self.stderr = asyncio.StreamReader()
        for line in lines:
            self.stdout.feed_data(line)
        self.stdout.feed_eof()
        self.stderr.feed_eof()
        self.returncode: int | None = 0

    async def wait(self) -> int:
        return 0


class _Port:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def call(
        self, tool: str, args: Mapping[str, Any] | None, transport: str | None = None
    ) -> Any:
        self.calls.append(tool)
        return {"total": 7}


def _run(
    monkeypatch: pytest.MonkeyPatch, lines: list[bytes], open_for: int
) -> tuple[Any, _Port, _Process]:
    made: list[_Process] = []

    async def spawn(*_args: Any, **_kwargs: Any) -> _Process:
        # Built on the running loop: a StreamReader belongs to the loop it is made on.
        made.append(_Process(lines, open_for))
        return made[-1]

    monkeypatch.setattr(command.asyncio, "create_subprocess_shell", spawn)
    port = _Port()
    agent = CommandAgent("agent")
    context = TrialContext(task_id="t", trial=0, input="hi")

    async def go() -> Any:
        try:
            return await agent.run(context, port)
        except AgentProtocolError as exc:
            return exc

    result = asyncio.run(go())
    return result, port, made[0]


@pytest.mark.parametrize("open_for", [0, 1])
def test_a_bad_line_is_reported_whether_or_not_the_start_reached_the_agent(
    monkeypatch: pytest.MonkeyPatch, open_for: int
) -> None:
    result, _, _ = _run(monkeypatch, [b"hello, not json\n"], open_for)
    assert isinstance(result, AgentProtocolError)
    assert "not JSON: 'hello, not json'" in str(result)


@pytest.mark.parametrize("open_for", [0, 1])
def test_a_final_answer_counts_whether_or_not_the_start_reached_the_agent(
    monkeypatch: pytest.MonkeyPatch, open_for: int
) -> None:
    result, _, _ = _run(monkeypatch, [b'{"type": "final", "output": 42}\n'], open_for)
    assert not isinstance(result, AgentProtocolError)
    assert result.output == 42


def test_an_exit_after_a_tool_call_is_an_exit_whether_or_not_the_answer_was_delivered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call = b'{"type": "tool-call", "id": "c1", "tool": "crm:lookup", "args": {}}\n'
    messages = []
    for open_for in (1, 2):
        result, port, _ = _run(monkeypatch, [call], open_for)
        assert isinstance(result, AgentProtocolError)
        assert port.calls == ["crm:lookup"]
        messages.append(str(result))
    assert messages[0] == messages[1]
    assert "exited with code 0 before sending a final message" in messages[0]


def test_a_tool_call_after_the_agent_closed_its_input_is_not_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call = b'{"type": "tool-call", "id": "c1", "tool": "crm:lookup", "args": {}}\n'
    result, port, proc = _run(monkeypatch, [call, call], open_for=1)
    assert isinstance(result, AgentProtocolError)
    assert "closed its input before the trial ended" in str(result)
    assert port.calls == ["crm:lookup"]
    assert len(proc.stdin.lines) == 2
