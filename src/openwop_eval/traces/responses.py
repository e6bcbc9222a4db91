"""OpenAI Responses API items: ``function_call``, ``function_call_output``, ``message``.

    [{"type": "message", "role": "user", "content": "Refund A-1001"},
     {"type": "function_call", "call_id": "call_1", "name": "crm_lookup",
      "arguments": "{\\"orderId\\": \\"A-1001\\"}"},
     {"type": "function_call_output", "call_id": "call_1",
      "output": "{\\"status\\": \\"delivered\\"}"},
     {"type": "message", "role": "assistant",
      "content": [{"type": "output_text", "text": "Refunded."}]}]

What ``RunResult.to_input_list()`` of the OpenAI Agents SDK gives, and what a Responses
``output`` holds. A ``function_call_output`` answers the call with its ``call_id``; the
output is the text of the last assistant message when no function call came after it.
Other items (reasoning, built-in tools such as ``web_search_call``) are not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import JSON
from .chat import Calls
from .records import TraceCall, TraceError, text_of


def read_items(items: Sequence[Any]) -> tuple[tuple[TraceCall, ...], JSON]:
    """The function calls of a list of Responses items and the answer."""
    calls = Calls()
    output: JSON = None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TraceError("an item must be an object", (i,))
        kind = item.get("type")
        if kind == "function_call":
            calls.add(item.get("call_id"), item.get("name"), item.get("arguments"), (i,))
            output = None
        elif kind == "function_call_output":
            calls.answer(item.get("call_id"), _output(item.get("output")), (i, "call_id"))
        elif kind in ("message", None) and item.get("role") == "assistant":
            output = text_of(item.get("content"))
    return calls.frozen(), output


def _output(value: Any) -> Any:
    return text_of(value) if isinstance(value, list) else value
