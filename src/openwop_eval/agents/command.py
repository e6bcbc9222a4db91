"""``cmd:COMMAND``: an agent in any language, as a subprocess speaking JSON lines.

One process per trial — in a conversation task, one for the whole conversation. Each message
is one JSON object on one line.

runner → agent (stdin)
    {"type": "start", "taskId": "...", "trial": 0, "input": ..., "memory": [...], "tools": [...]}
    {"type": "tool-result", "id": "c1", "ok": true, "result": ...}
    {"type": "tool-result", "id": "c1", "ok": false,
     "error": {"kind": "fixture-miss" | "tool-error", "message": "..."}}

agent → runner (stdout)
    {"type": "tool-call", "id": "c1", "tool": "crm:lookup", "args": {...}}
    {"type": "final", "output": ..., "costUsd": 0.01, "latencyMs": 1200}   (cost, latency optional)
    {"type": "error", "message": "..."}                                   (the trial errors)

Anything else on stdout, or an exit before ``final`` or ``error``, breaks the protocol and the
trial errors. stderr is kept (the last 4 KiB) for the report.

A conversation (:meth:`CommandAgent.converse`) plays each agent turn as the exchange above. The
``start`` line also carries ``"turn": 0`` and ``"messages"``, the conversation so far
(``{"role": "user" | "assistant", "content": TEXT}``, ending with the user message the turn
answers); after the agent's ``final``, each next user message comes as

    {"type": "user", "turn": 1, "message": "...", "messages": [...]}

and the agent answers it with tool calls and another ``final`` (or ``error``). When the
conversation ends the runner closes the agent's stdin and ends the process. An agent that exits
after a ``final`` while the conversation goes on breaks the protocol: the trial errors.

An agent that closes its input (or exits) while a message is on its way to it is judged by what
it wrote to stdout, read to the end: whether the write or the exit came first is a race between
two processes, and the verdict must not depend on it. Only a tool call that arrives after the
input is closed is reported as "closed its input".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from .base import (
    AgentProtocolError,
    AgentReply,
    Conversation,
    ToolCallError,
    ToolMissError,
    ToolPort,
    TrialContext,
)

STDERR_TAIL = 4096
LINE_LIMIT = 16 * 1024 * 1024
STDERR_GRACE_S = 1.0
"""How long an exited agent's stderr may take to reach its end."""
EXIT_GRACE_S = 1.0
"""How long a conversation's agent may take to exit once its input is closed, before it is
killed."""


class CommandError(RuntimeError):
    """The agent reported an error (``{"type": "error"}``)."""


class CommandAgent:
    def __init__(self, command: str, agent_id: str = "cmd") -> None:
        self.command = command
        self.agent_id = agent_id

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        with kept_stderr() as stderr:
            return await self._run(context, port, stderr)

    async def _run(self, context: TrialContext, port: ToolPort, kept: bytearray) -> AgentReply:
        async with spawned(self.command, tail=kept) as (proc, stderr):
            delivered = await _send(proc, _start(context))
            return await _exchange(proc, port, stderr, delivered)

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation:
        """One process for the whole conversation: its first turn opens with ``start``, each
        next one with a ``user`` line (see the module's docstring)."""
        return _CommandConversation(self.command, port)


class _CommandConversation:
    def __init__(self, command: str, port: ToolPort) -> None:
        self._command, self._port = command, port
        self._kept = bytearray()
        self._stack = contextlib.AsyncExitStack()
        self._proc: Any = None

    async def reply(self, context: TrialContext) -> AgentReply:
        with kept_stderr(self._kept):
            try:
                if self._proc is None:
                    spawn = spawned(self._command, tail=self._kept)
                    self._proc, _ = await self._stack.enter_async_context(spawn)
                    delivered = await _send(self._proc, _start(context))
                else:
                    delivered = await _send(self._proc, _user(context))
                return await _exchange(self._proc, self._port, self._kept, delivered, context.turn)
            except BaseException:  # the conversation ends here: reaped, its stderr tail whole
                await self.aclose()
                raise

    async def aclose(self) -> None:
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # end of input: the agent may exit on its own
            if proc.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), EXIT_GRACE_S)
        await self._stack.aclose()  # killed if still running, and reaped


def _start(context: TrialContext) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "start",
        "taskId": context.task_id,
        "trial": context.trial,
        "input": context.input,
        "memory": list(context.memory),
        "tools": list(context.tool_names),
    }
    if context.turn is not None:  # a conversation's first turn; one exchange is unchanged
        message.update(turn=context.turn, messages=_messages(context))
    return message


def _user(context: TrialContext) -> dict[str, Any]:
    """A conversation's next user message, after the agent's ``final``."""
    return {
        "type": "user",
        "turn": context.turn,
        "message": context.user_message,
        "messages": _messages(context),
    }


def _messages(context: TrialContext) -> list[dict[str, Any]]:
    return [dict(message) for message in context.messages]


async def _exchange(
    proc: Any, port: ToolPort, stderr: bytearray, open_input: bool, turn: int | None = None
) -> AgentReply:
    """The agent's tool calls, each answered, up to its ``final`` (``turn``: the conversation
    turn it answers, None for one exchange)."""
    answered = False
    while True:
        line = await proc.stdout.readline()
        if not line:
            raise _exited(await proc.wait(), stderr, turn, answered)
        message = _decode(line)
        kind = message.get("type")
        if kind == "final":
            return AgentReply(
                message.get("output"),
                _number(message, "costUsd"),
                _number(message, "latencyMs"),
            )
        if kind == "error":
            raise CommandError(str(message.get("message", "the agent reported an error")))
        if kind != "tool-call":
            raise AgentProtocolError(f"unexpected message type {kind!r} from the agent")
        if not open_input:
            raise AgentProtocolError("the agent closed its input before the trial ended")
        open_input = await _send(proc, await _answer(port, message))
        answered = True


def _exited(code: int, stderr: bytearray, turn: int | None, answered: bool) -> AgentProtocolError:
    tail = stderr.decode("utf-8", "replace").strip()[-500:]
    said = f"; stderr: {tail}" if tail else ""
    if turn is None:
        return AgentProtocolError(
            f"the agent exited with code {code} before sending a final message{said}"
        )
    if turn > 0 and not answered:
        return AgentProtocolError(
            f"the agent exited with code {code} after its final message while the conversation"
            f" went on: the user message of turn {turn} had no answer (a conversation's agent"
            f" reads the next user line){said}"
        )
    return AgentProtocolError(
        f"the agent exited with code {code} in turn {turn} before sending a final message{said}"
    )


async def _answer(port: ToolPort, message: dict[str, Any]) -> dict[str, Any]:
    call_id, tool, args = message.get("id"), message.get("tool"), message.get("args", {})
    if not isinstance(tool, str) or not isinstance(args, dict):
        raise AgentProtocolError("a tool-call needs a string 'tool' and an object 'args'")
    try:
        result = await port.call(tool, args)
    except ToolMissError as exc:
        return _failure(call_id, "fixture-miss", str(exc))
    except ToolCallError as exc:
        return _failure(call_id, "tool-error", str(exc))
    return {"type": "tool-result", "id": call_id, "ok": True, "result": result}


@contextlib.contextmanager
def kept_stderr(kept: bytearray | None = None) -> Iterator[bytearray]:
    """A buffer for an agent's stderr tail (``kept``, or a new one); an exception leaving the
    block carries the tail as its ``stderr`` (for the trial's diagnostics: the local report,
    never an event)."""
    kept = bytearray() if kept is None else kept
    try:
        yield kept
    except Exception as exc:
        text = kept.decode("utf-8", "replace").strip()
        if text and getattr(exc, "stderr", None) is None:
            exc.stderr = text  # type: ignore[attr-defined]
        raise


@contextlib.asynccontextmanager
async def spawned(
    command: str, env: Mapping[str, str] | None = None, *, tail: bytearray | None = None
) -> AsyncIterator[tuple[Any, bytearray]]:
    """``command`` started with the shell, its stdin, stdout and stderr piped, and the tail
    of its stderr kept as it runs; killed (if still running) and reaped when the block ends,
    however it ends."""
    proc = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=LINE_LIMIT,
        env=env,
        start_new_session=True,  # a process group of its own: see _kill
    )
    stderr = bytearray() if tail is None else tail
    drain = asyncio.create_task(drain_tail(proc.stderr, stderr))
    try:
        yield proc, stderr
    finally:
        exited = proc.returncode is not None
        if not exited:
            _kill(proc)
        await proc.wait()
        if exited:  # the rest of its stderr, for the tail: bounded, a child may hold it open
            await asyncio.wait({drain}, timeout=STDERR_GRACE_S)
        drain.cancel()


def _kill(proc: Any) -> None:
    """The shell and what it started: a shell that runs its command as a child rather than
    in its own place (dash does) would leave the agent running, holding the pipes the
    process's reaping waits on."""
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _failure(call_id: Any, kind: str, message: str) -> dict[str, Any]:
    return {
        "type": "tool-result",
        "id": call_id,
        "ok": False,
        "error": {"kind": kind, "message": message},
    }


def _decode(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        text = line.decode("utf-8", "replace").strip()
        raise AgentProtocolError(
            f"the agent wrote a line that is not JSON: {text[:200]!r}"
        ) from None
    if not isinstance(message, dict):
        raise AgentProtocolError("each message from the agent must be a JSON object")
    return message


def _number(message: dict[str, Any], key: str) -> float | None:
    value = message.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise AgentProtocolError(f"{key} must be a number ≥ 0, got {value!r}")
    return float(value)


async def _send(proc: Any, message: dict[str, Any]) -> bool:
    """Write one message; False when the agent has closed its input (it reads no more)."""
    try:
        proc.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


async def drain_tail(stream: Any, into: bytearray) -> None:
    """Read ``stream`` to its end, keeping its last ``STDERR_TAIL`` bytes in ``into``."""
    while chunk := await stream.read(65536):
        into.extend(chunk)
        del into[:-STDERR_TAIL]
