"""Golden scoring: ``exact``, ``contains`` and ``json-match`` against a deterministic value.

Rules for non-string values (the protocol leaves them open):

* ``exact``: both sides are stringified — a string stays as it is, anything else becomes its
  RFC 8785 canonical JSON text — and the texts must be equal. So ``42`` equals ``"42"`` and
  ``{"b": 1, "a": 2}`` equals ``{"a":2,"b":1}``.
* ``contains``: the stringified value is a case-sensitive substring of the stringified output.
* ``json-match``: a string output is parsed as JSON (if it does not parse, the string itself is
  the value); then JSON deep equality with ``value`` as written: key order ignored, arrays in
  order, ``1 == 1.0``, ``true != 1``.

A match scores 1, anything else 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from .canonical import JSON, canonical_json, json_equal, stringify
from .suite import GoldenMatch


def golden_matches(match: GoldenMatch, output: JSON) -> bool:
    if match.strategy == "exact":
        return stringify(output) == stringify(match.value)
    if match.strategy == "contains":
        return stringify(match.value) in stringify(output)
    return json_equal(_as_json(output), match.value)


def golden_score(match: GoldenMatch, output: JSON) -> float:
    return 1.0 if golden_matches(match, output) else 0.0


def _as_json(output: JSON) -> JSON:
    if not isinstance(output, str):
        return output
    try:
        return json.loads(output)
    except ValueError:
        return output


def golden_scorer(match: GoldenMatch) -> Callable[[JSON], float]:
    """:func:`golden_score` with the expected side stringified once, not once per trial."""
    if match.strategy == "json-match":
        return lambda output: golden_score(match, output)
    try:
        want = stringify(match.value)
    except Exception:  # a value rfc8785 refuses: let each trial meet the error as it did
        return lambda output: golden_score(match, output)

    def text(output: JSON) -> str:
        return output if isinstance(output, str) else canonical_json(output)

    if match.strategy == "exact":
        return lambda output: 1.0 if text(output) == want else 0.0
    return lambda output: 1.0 if want in text(output) else 0.0
