"""What goes over A2A and what comes back: a trial's input as an A2A message, a task's
states, and the output read from a finished task or an agent's message.

A2A 1.0's types are protocol buffers (``a2a.types.a2a_pb2``); a message's ``metadata`` and a
data part's ``data`` are ``google.protobuf`` Struct and Value, which hold every number as a
double: integral numbers are given back as integers so an output reads as the agent sent it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...base.limits import MAX_SAFE_INTEGER
from ...core import JSON

if TYPE_CHECKING:  # the SDK and protobuf are imported where used: `a2a` is an extra
    from a2a.types.a2a_pb2 import Artifact, Message, Part, Task
    from google.protobuf import struct_pb2

TOOLS_EXTENSION = "https://openwop.dev/a2a/extensions/mcp-tools/v1"
"""The A2A extension through which an agent is told a trial's MCP servers: an agent whose
card lists it in ``capabilities.extensions`` has a tool path (see ``docs/a2a.md``)."""

TERMINAL_ERRORS = {
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_REJECTED": "rejected",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
}
"""The states that end a task as the agent's error, as the protocol names them."""
WORKING = frozenset({"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"})
"""The states of a task still under way."""
ANSWERED = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"})
"""The states that end a turn with the agent's answer (``input-required``: its question)."""


class A2AReplyError(ValueError):
    """The agent's answer is well formed but holds no output (no text, no data)."""


def user_message(
    content: JSON,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Message:
    """``content`` as a user message: a string (or an object's string ``message``) as a text
    part, anything else as a data part holding its JSON."""
    from a2a.types.a2a_pb2 import ROLE_USER, Message, Part
    from google.protobuf import json_format, struct_pb2

    if isinstance(content, str):
        part = Part(text=content)
    elif isinstance(content, dict) and isinstance(content.get("message"), str):
        part = Part(text=content["message"])
    else:
        value = struct_pb2.Value()
        json_format.ParseDict(content, value)
        part = Part(data=value, media_type="application/json")
    message = Message(message_id=uuid.uuid4().hex, role=ROLE_USER, parts=[part])
    if context_id:
        message.context_id = context_id
    if task_id:
        message.task_id = task_id
    if metadata:
        message.metadata.update(dict(metadata))
    return message


def state_name(task: Task) -> str:
    from a2a.types.a2a_pb2 import TaskState

    name: str = TaskState.Name(task.status.state)
    return name


def told_state(name: str) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` as the protocol's JSON names it: ``input-required``."""
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def task_output(task: Task) -> JSON:
    """A finished task's answer: its last artifact, else its status message, else the last
    agent message of its history."""
    from a2a.types.a2a_pb2 import ROLE_AGENT

    if task.artifacts:
        return parts_output(task.artifacts[-1].parts)
    if task.status.HasField("message") and task.status.message.parts:
        return parts_output(task.status.message.parts)
    said = [m for m in task.history if m.role == ROLE_AGENT and m.parts]
    if said:
        return parts_output(said[-1].parts)
    raise A2AReplyError(f"the task ended {told_state(state_name(task))} with no artifact")


def status_text(task: Task) -> str:
    """The text of a task's status message (why it failed), or ``""``."""
    if not task.status.HasField("message"):
        return ""
    return "\n".join(p.text for p in task.status.message.parts if p.HasField("text"))


def parts_output(parts: Sequence[Part]) -> JSON:
    """The text parts joined as they are (a streamed answer comes in chunks, each a part);
    without text, the one data part's value (a list of the values of several); neither is an
    agent's error."""
    texts = [p.text for p in parts if p.WhichOneof("content") == "text"]
    if texts:
        return "".join(texts)
    data = [_value(p.data) for p in parts if p.WhichOneof("content") == "data"]
    if not data:
        kinds = sorted({str(p.WhichOneof("content")) for p in parts}) or ["none"]
        raise A2AReplyError(f"the answer has no text or data part (parts: {', '.join(kinds)})")
    return data[0] if len(data) == 1 else data


def merge_artifact(task: Task, artifact: Artifact, append: bool) -> None:
    """An artifact update applied to ``task``: a new artifact, one replaced, or (``append``)
    its parts added to those of the artifact of the same id, as the SDK's task store does."""
    for held in task.artifacts:
        if held.artifact_id == artifact.artifact_id:
            if append:
                held.parts.extend(artifact.parts)
            else:
                held.CopyFrom(artifact)
            return
    task.artifacts.append(artifact)


def _value(value: struct_pb2.Value) -> JSON:
    from google.protobuf import json_format

    return _integral(json_format.MessageToDict(value))


def _integral(value: Any) -> JSON:
    """Integral doubles back to integers (a Value has no integers), within JSON's safe range."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    result: JSON = value
    return result
