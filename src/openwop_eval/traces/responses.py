"""OpenAI Responses API items: ``function_call`` and its output, ``mcp_call``, ``message``.

    [{"type": "message", "role": "user", "content": "Refund A-1001"},
     {"type": "function_call", "call_id": "call_1", "name": "crm_lookup",
      "arguments": "{\\"orderId\\": \\"A-1001\\"}"},
     {"type": "function_call_output", "call_id": "call_1",
      "output": "{\\"status\\": \\"delivered\\"}"},
     {"type": "mcp_call", "id": "mcp_1", "server_label": "payments", "name": "refund",
      "arguments": "{\\"orderId\\": \\"A-1001\\"}", "output": "{\\"refunded\\": true}",
      "error": null},
     {"type": "message", "role": "assistant",
      "content": [{"type": "output_text", "text": "Refunded."}]}]

What ``RunResult.to_input_list()`` of the OpenAI Agents SDK gives, and what a Responses
``output`` holds. A ``function_call_output`` answers the call with its ``call_id``. An
``mcp_call`` — a tool the API called on a remote MCP server — holds its own result and
error; its tool is ``server_label:name`` (``payments:refund`` is tool ``refund`` on MCP
server ``payments``). The output is the text of the last assistant message when no call came
after it. Other items (reasoning, ``mcp_list_tools``, MCP approval requests and responses,
built-in tools such as ``web_search_call``) are not read. Several user messages make a
conversation of several agent turns (:mod:`.turns`), as chat messages do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import JSON
from ..core.problems import Loc
from .chat import Calls
from .records import Exchange, TraceError, text_of
from .turns import TurnSplitter


def read_items(items: Sequence[Any]) -> Exchange:
    """The function and MCP calls of a list of Responses items, the answer and the turns."""
    calls = Calls()
    output: JSON = None
    turns = TurnSplitter()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TraceError("an item must be an object", (i,))
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call":
            name, arguments = item.get("name"), item.get("arguments")
            calls.add(item.get("call_id"), name, arguments, (i,), turns.index)
            output = None
            turns.reply(None)
        elif kind == "function_call_output":
            calls.answer(item.get("call_id"), _output(item.get("output")), (i, "call_id"))
            turns.act()
        elif kind == "mcp_call":
            _mcp_call(calls, item, i, turns.index)
            output = None
            turns.reply(None)
        elif kind in ("message", None) and role == "assistant":
            output = text_of(item.get("content"))
            turns.reply(output)
        elif kind in ("message", None) and role == "user":
            turns.user(item.get("content"))
    return Exchange(calls.frozen(), output, turns.turns())


def _mcp_call(calls: Calls, item: dict[str, Any], i: int, turn: int) -> None:
    label, name = item.get("server_label"), item.get("name")
    for key, value in (("server_label", label), ("name", name)):
        if not isinstance(value, str) or not value:
            raise TraceError(f"an mcp_call needs a {key} (a non-empty string)", (i, key))
    # no id: nothing answers an mcp_call later, and its id is not a function call's call_id
    calls.add(None, f"{label}:{name}", item.get("arguments"), (i,), turn)
    call = calls.order[-1]
    call.answer(_output(item.get("output")), (i, "output"))
    call.error = _mcp_error(item.get("error"), item.get("status"), (i, "error"))


def _mcp_error(value: Any, status: Any, where: Loc) -> str | None:
    """An ``mcp_call``'s error: text, or (as newer API versions write it) an object —
    ``{"type": "mcp_protocol_error", "code": -32602, "message": …}``,
    ``{"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": …}]}``."""
    if value is None:
        return "the MCP call failed" if status == "failed" else None
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise TraceError("an mcp_call's error must be text, an object or null", where)
    kind, code, message = value.get("type"), value.get("code"), value.get("message")
    head = kind if isinstance(kind, str) and kind else "error"
    if isinstance(code, int) and not isinstance(code, bool):
        head = f"{head} {code}"
    detail = message if isinstance(message, str) else text_of(value.get("content"))
    return f"{head}: {detail}" if detail else head


def _output(value: Any) -> Any:
    return text_of(value) if isinstance(value, list) else value
