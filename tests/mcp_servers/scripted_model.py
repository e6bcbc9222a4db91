"""A scripted model for the Agents SDK agent, served by the fake Chat Completions endpoint
(``tests/fakes/openai_server.py``): it asks for the calls the task's input names, one a
turn, in order, then answers.

The script is a function of the request alone — the task's input is the conversation's
first user message, and the number of tool results already in it says which call is next —
so trials running at once each get their own script."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.fakes.openai_server import Reply, Seen

MODEL = "support-model"


def respond(seen: Seen) -> Reply:
    """The next turn of the conversation ``seen`` carries."""
    messages: list[dict[str, Any]] = seen.body["messages"]
    task = json.loads(next(m["content"] for m in messages if m["role"] == "user"))
    done = sum(1 for m in messages if m["role"] == "tool")
    if done < len(task["calls"]):
        _, tool, args = task["calls"][done]
        call = {"id": f"call_{done}", "type": "function"}
        call["function"] = {"name": tool, "arguments": json.dumps(args)}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return _completion(message, "tool_calls")
    return _completion({"role": "assistant", "content": f"Done: {task['answer']}."}, "stop")


def offered(seen: Seen) -> set[str]:
    """The names of the functions the request offered the model."""
    return {tool["function"]["name"] for tool in seen.body.get("tools", [])}


def _completion(message: dict[str, Any], finish: str) -> Reply:
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Reply(body=json.dumps(body))
