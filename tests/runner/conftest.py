"""Fixtures for runner tests: a store per test and a CLI invoker."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.store import Store

FIXTURES = Path(str(resources.files("openwop_eval.conformance") / "fixtures"))


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@pytest.fixture
def store(store_url: str) -> Store:
    return Store(store_url)


@dataclass
class Ran:
    exit_code: int
    output: str
    stderr: str
    summary: dict[str, Any] | None
    events: list[dict[str, Any]]
    report: dict[str, Any] | None
    dir: Path

    def scored(self) -> list[dict[str, Any]]:
        return [e["payload"] for e in self.events if e["type"] == "eval.scored"]


@pytest.fixture
def run_cli(tmp_path: Path, store_url: str) -> Callable[..., Ran]:
    counter = iter(range(1000))

    def invoke(*args: str) -> Ran:
        out = tmp_path / f"out{next(counter)}"
        out.mkdir()
        argv = [
            "run",
            *args,
            "--store",
            store_url,
            "--out",
            str(out / "summary.json"),
            "--events",
            str(out / "events.jsonl"),
            "--report",
            str(out / "report.json"),
            "--quiet",
        ]
        result = CliRunner().invoke(main, argv, catch_exceptions=False)
        events_path = out / "events.jsonl"
        return Ran(
            result.exit_code,
            result.stdout,
            result.stderr,
            _json(out / "summary.json"),
            [json.loads(line) for line in events_path.read_text().splitlines()]
            if events_path.exists()
            else [],
            _json(out / "report.json"),
            out,
        )

    return invoke


def _json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path
