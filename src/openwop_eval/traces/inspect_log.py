"""Inspect AI logs (``.eval`` or ``.json``), read by ``inspect_ai.log.read_eval_log``.

The log's layout changes between Inspect versions, so it is read only through Inspect itself
(``pip install 'openwop-eval[inspect]'``). A sample is a task (its id is the taskId), an
epoch a trial (epoch 1 is trial 0). A sample's tool calls are its ``ToolEvent`` events, in
order — with their results and errors — or, in a log whose events were left out, the
``tool_calls`` of its assistant messages answered by its ``tool`` messages. The output is
``output.completion``; the latency ``total_time``; the cost the sum of ``model_usage``'s
``total_cost``; a sample that ended in an error errors its trial.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Any

from ..base import limits
from ..core import JSON
from .chat import Calls
from .records import Trace, TraceCall, TraceError, parse_arguments, parse_result


def read_inspect_log(path: Path, source: str) -> list[Trace]:
    """Every sample of the log, one trace per epoch."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise TraceError(
            "reading an Inspect log needs inspect_ai: pip install 'openwop-eval[inspect]'"
        ) from None
    _check_size(path)
    try:
        log = read_eval_log(str(path), resolve_attachments=True)
    except Exception as exc:  # whatever Inspect raises on a damaged log is the file's problem
        why = f"{type(exc).__name__}: {_short(exc)}"
        raise TraceError(f"not a readable Inspect log: {why}") from None
    return [_trace(sample, source) for sample in log.samples or ()]


def _check_size(path: Path) -> None:
    """The JSON Inspect decodes, zipped or not, within the one file limit."""
    limit = limits.MAX_FILE_BYTES
    if not path.is_file():  # a FIFO or a device would never end
        raise TraceError("an Inspect log must be a regular file")
    size = path.stat().st_size
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            size = sum(info.file_size for info in archive.infolist())
    if size > limit:
        raise TraceError(f"the log holds {size:,} bytes; the limit is {limit:,} bytes")


def _trace(sample: Any, source: str) -> Trace:
    sample_id = str(sample.id)
    events = [e for e in sample.events or () if getattr(e, "event", None) == "tool"]
    calls = tuple(_event_call(e) for e in events) if events else _message_calls(sample.messages)
    output = sample.output
    error = getattr(sample, "error", None)
    return Trace(
        source=f"{source} sample {sample_id} epoch {sample.epoch}",
        keys=(sample_id,),
        calls=calls,
        output=output.completion if output is not None and output.choices else None,
        task_id=sample_id,
        trial=sample.epoch - 1,
        cost_usd=_cost(sample.model_usage),
        latency_ms=None if sample.total_time is None else sample.total_time * 1000,
        error=None if error is None else f"the sample ended in an error: {error.message}",
    )


def _event_call(event: Any) -> TraceCall:
    error = event.error
    return TraceCall(
        str(event.function),
        parse_arguments(event.arguments),
        _result(event.result),
        None if error is None else f"{error.type}: {error.message}",
    )


def _message_calls(messages: Any) -> tuple[TraceCall, ...]:
    calls = Calls()
    for i, message in enumerate(messages or ()):
        if message.role == "assistant":
            for j, call in enumerate(message.tool_calls or ()):
                calls.add(call.id, call.function, call.arguments, ("messages", i, j))
        elif message.role == "tool" and message.tool_call_id in calls.by_id:
            calls.answer(message.tool_call_id, message.text, ("messages", i))
    return calls.frozen()


def _result(value: Any) -> JSON:
    if isinstance(value, list):  # content parts: their text
        return "".join(getattr(part, "text", "") or "" for part in value)
    return parse_result(value)


def _cost(usage: Any) -> float | None:
    costs = [getattr(u, "total_cost", None) for u in (usage or {}).values()]
    known = [c for c in costs if isinstance(c, int | float) and math.isfinite(c) and c >= 0]
    return sum(known) if known else None


def _short(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return lines[0][:300] if lines else ""
