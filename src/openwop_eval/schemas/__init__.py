"""The JSON Schemas shipped with the package, and how they are generated from the models.

The schemas are generated from the pydantic models of :mod:`openwop_eval.core` (so names
follow :mod:`openwop_eval.core.names`) and committed beside this module. ``python -m
openwop_eval.schemas --check`` fails when a committed file no longer matches the models.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ..core.suite import Suite
from ..core.summary import EvalSummary

SUITE_SCHEMA = "agent-eval-suite.schema.json"
SUMMARY_SCHEMA = "eval-summary.schema.json"

_HEADERS: dict[str, dict[str, str]] = {
    SUITE_SCHEMA: {
        "$id": "https://openwop.dev/spec/v2/agent-eval-suite.schema.json",
        "title": "AgentEvalSuite",
        "description": "RFC 0081 §A eval suite with this implementation's RFC 0244"
        " reconstruction (trials, expected.trajectory, fixtures.onMiss). Closed objects.",
    },
    SUMMARY_SCHEMA: {
        "$id": "https://openwop.dev/spec/v2/eval-summary.schema.json",
        "title": "EvalSummary",
        "description": "RFC 0081 §C eval summary with RFC 0244 tasks[].trials and the RFC 0246"
        " gatedScore / gatedAggregateScore. Content-free: scores, counts and ids only.",
    },
}
_MODELS: dict[str, type[BaseModel]] = {SUITE_SCHEMA: Suite, SUMMARY_SCHEMA: EvalSummary}


class _ProtocolSchema(GenerateJsonSchema):
    """Optional members may be omitted but are never ``null``, as in the protocol schemas."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        generated = super().default_schema(schema)
        if generated.get("default", 0) is None or generated.get("default") == []:
            generated.pop("default")
        return generated

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def generate(name: str) -> dict[str, Any]:
    body = _MODELS[name].model_json_schema(by_alias=True, schema_generator=_ProtocolSchema)
    body.pop("title", None)
    body.pop("description", None)
    for definition in body.get("$defs", {}).values():
        definition.pop("title", None)
    header = {"$schema": "https://json-schema.org/draft/2020-12/schema", **_HEADERS[name]}
    header.pop("description")
    return {**header, "description": _HEADERS[name]["description"], **body}


def render(name: str) -> str:
    return json.dumps(generate(name), indent=2, ensure_ascii=False) + "\n"


@cache
def load(name: str) -> dict[str, Any]:
    """A shipped schema, as committed in the package."""
    data: dict[str, Any] = json.loads(
        resources.files(__package__).joinpath(name).read_text("utf-8")
    )
    return data


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    stale = [name for name in _MODELS if (here / name).read_text("utf-8") != render(name)]
    if "--write" in argv:
        for name in stale:
            (here / name).write_text(render(name), "utf-8")
            print(f"wrote {name}")
        return 0
    for name in stale:
        print(f"{name} is stale: run python -m openwop_eval.schemas --write", file=sys.stderr)
    return 1 if stale else 0
