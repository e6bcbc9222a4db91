"""The documentation covers every suite field and every command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from openwop_eval import schemas
from openwop_eval.cli.main import main

DOCS = Path(__file__).parent.parent / "docs"


def _property_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, dict):
        names.update(node.get("properties", {}))
        for value in node.values():
            names |= _property_names(value)
    elif isinstance(node, list):
        for value in node:
            names |= _property_names(value)
    return names


def test_every_suite_field_is_documented() -> None:
    text = (DOCS / "suite-format.md").read_text()
    missing = {
        n for n in _property_names(schemas.load(schemas.SUITE_SCHEMA)) if f"`{n}`" not in text
    }
    assert not missing


def test_every_matcher_is_documented() -> None:
    from openwop_eval.core.matchers import MATCHER_KEYS

    text = (DOCS / "suite-format.md").read_text()
    assert all(f'"{key}"' in text for key in MATCHER_KEYS)


def test_every_command_is_documented() -> None:
    text = (DOCS / "cli.md").read_text()
    names = main.list_commands(click.Context(main))
    assert len(names) == 11
    assert all(f"## `openwop-eval {name}`" in text for name in names)


def test_every_summary_field_is_documented() -> None:
    text = (DOCS / "grading.md").read_text()
    fields = _property_names(schemas.load(schemas.SUMMARY_SCHEMA))
    ours = {
        "gatedScore",
        "gatedAggregateScore",
        "meanScore",
        "passAtK",
        "passHatK",
        "trialStats",
        "aggregateScore",
        "passedCount",
        "taskCount",
        "costUsd",
        "latencyMs",
    }
    assert ours <= fields
    assert all(f"`{n}`" in text or f".{n}`" in text for n in ours)
