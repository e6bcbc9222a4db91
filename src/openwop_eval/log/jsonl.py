"""Event logs as JSON lines: strict JSON, every broken line a located error."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from .names import sequence_of


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: a number no store or reader can hold
        raise ValueError(f"{text} is not a finite number")
    return value


def parse_jsonl(lines: Iterable[str], source: str = "<events>") -> list[dict[str, Any]]:
    """Events from JSON lines, in sequence order; blank lines are skipped.

    Strict JSON — no ``NaN``, ``Infinity`` or numbers that overflow — and each event an
    object; anything else is a ``ValueError`` naming ``source`` and the line, never a crash.
    """
    docs = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line, parse_constant=_no_constant, parse_float=_finite)
        except RecursionError:
            raise ValueError(f"{source}:{number}: an event nested too deeply") from None
        except ValueError as exc:
            raise ValueError(f"{source}:{number}: not a JSON event ({exc})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{source}:{number}: an event must be a JSON object")
        docs.append(doc)
    return sorted(docs, key=sequence_of)
