"""The shipped JSON Schemas: current with the models, closed, and honoured by the outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from openwop_eval import parse_suite, schemas, summary_dict
from openwop_eval.core import names
from openwop_eval.files.schema_errors import ModelValidator, model_validator, schema_problems
from tests.helpers import calls, golden, graded, rubric, suite_doc, trial

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("name", [schemas.SUITE_SCHEMA, schemas.SUMMARY_SCHEMA])
def test_committed_schemas_match_the_models(name: str) -> None:
    assert schemas.load(name) == schemas.generate(name), (
        f"{name} is stale: run python -m openwop_eval.schemas --write"
    )


def _objects(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            found.append(node)
        for value in node.values():
            found.extend(_objects(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_objects(value))
    return found


@pytest.mark.parametrize("name", [schemas.SUITE_SCHEMA, schemas.SUMMARY_SCHEMA])
def test_every_object_is_closed_and_nothing_is_nullable(name: str) -> None:
    schema = schemas.load(name)
    assert all(obj.get("additionalProperties") is False for obj in _objects(schema))
    assert '"null"' not in json.dumps(schema)


def test_reconstructed_names_reach_the_schemas() -> None:
    suite = json.dumps(schemas.load(schemas.SUITE_SCHEMA))
    summary = json.dumps(schemas.load(schemas.SUMMARY_SCHEMA))
    for name in (
        names.TRIALS_PASS_RULE,
        names.TRAJ_MAX_CALLS,
        names.TRAJ_ARGS_MATCH,
        names.FIXTURES_ON_MISS,
    ):
        assert f'"{name}"' in suite
    for name in (names.SUM_PASS_HAT_K, names.SUM_TRIAL_STATS, names.STATS_STD_DEV):
        assert f'"{name}"' in summary


@pytest.mark.parametrize(
    "path",
    sorted(ROOT.glob("examples/**/suite.*"))
    + sorted((ROOT / "src/openwop_eval/conformance/fixtures").glob("*.suite.json")),
    ids=lambda p: p.name,
)
def test_shipped_suites_validate(path: Path) -> None:
    from openwop_eval import load_suite

    loaded = load_suite(path)
    assert not [w for w in loaded.warnings if w.severity == "error"]


def test_schema_and_models_agree_on_what_is_valid() -> None:
    """The structural check and the models accept and reject the same documents."""
    valid = suite_doc(
        golden("a", trajectory={"steps": [{"tool": "a:b"}]}),
        trials={"count": 2, "passRule": "all", "k": 1},
    )
    validator = jsonschema.Draft202012Validator(schemas.load(schemas.SUITE_SCHEMA))
    assert validator.is_valid(valid)
    assert parse_suite(valid).suite.trials is not None
    for broken in (
        {**valid, "trials": {"count": 2, "extra": 1}},
        {**valid, "modes": ["golden", "golden"]},
        {**valid, "thresholds": {"passScore": None}},
    ):
        assert not validator.is_valid(broken)
        with pytest.raises(ValueError, match="validation error"):
            type(parse_suite(valid).suite).model_validate(broken)


def test_summaries_validate_and_carry_no_content() -> None:
    doc = suite_doc(
        golden("a", value="SECRET-ANSWER", trajectory={"forbidden": ["x:y"]}),
        rubric("b", [0.5, 0.5]),
        pass_score=0.5,
        trials={"count": 2},
    )
    result = graded(
        doc,
        trial("a", 0, "SECRET-ANSWER", calls(("x:y", {"token": "SECRET-ARG"}))),
        trial("a", 1, "SECRET-OUTPUT", error="SECRET-ERROR"),
        trial("b", 0, "SECRET-RUBRIC-OUTPUT", verdicts=(1.0, 0.0)),
        trial("b", 1, "SECRET-RUBRIC-OUTPUT", verdicts=(1.0, 1.0)),
    )
    summary = summary_dict(result)
    jsonschema.validate(summary, schemas.load(schemas.SUMMARY_SCHEMA))
    text = json.dumps(summary)
    assert "SECRET" not in text
    assert "criterion" not in text
    forbidden_keys = {
        "taskOutput",
        "output",
        "rubric",
        "completion",
        "prompt",
        "body",
        "secret",
        "credentials",
        "token",
        "apiKey",
    }
    assert not forbidden_keys & set(_keys(summary))


def _keys(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [*node, *(k for v in node.values() for k in _keys(v))]
    if isinstance(node, list):
        return [k for v in node for k in _keys(v)]
    return []


def test_inlining_keeps_a_recursive_reference_and_what_it_validates() -> None:
    """A definition that refers to itself stays a reference inside itself (inlining it
    would never end), and the inlined schema accepts and rejects what the original does."""
    schema = {
        "$defs": {
            "Tree": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
                "additionalProperties": False,
            }
        },
        "type": "object",
        "properties": {
            "root": {"$ref": "#/$defs/Tree"},
            "pin": {"const": {"$ref": "#/$defs/Tree"}},  # data, never inlined
        },
    }
    inlined: Any = model_validator(schema).schema
    tree = inlined["properties"]["root"]
    assert tree["properties"]["kids"]["items"] == {"$ref": "#/$defs/Tree"}
    assert inlined["properties"]["pin"] == {"const": {"$ref": "#/$defs/Tree"}}
    deep: dict[str, Any] = {"root": {"kids": [{"kids": [{"kids": []}]}]}}
    bad: dict[str, Any] = {"root": {"kids": [{"kids": [{"kid": []}]}]}}
    for doc in (deep, bad):
        assert [p.path for p in schema_problems(model_validator(schema), doc)] == [
            p.path for p in schema_problems(ModelValidator(schema), doc)
        ]
    assert model_validator(schema).is_valid(deep)
    assert not model_validator(schema).is_valid(bad)


def test_the_shipped_schemas_definitions_set_no_base_that_inlining_would_move() -> None:
    """Inlining a definition is exact only while none sets ``$id`` or an anchor."""
    for name in (schemas.SUITE_SCHEMA, schemas.SUMMARY_SCHEMA):
        keys = set(_keys(schemas.load(name).get("$defs", {})))
        assert not keys & {"$id", "$anchor", "$dynamicAnchor", "$dynamicRef"}
