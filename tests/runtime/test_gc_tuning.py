"""The collector's settings: raised for eval processes, never lowered."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from openwop_eval.cli.main import main
from openwop_eval.runtime import gc_tuning


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_tune_raises_only_the_first_threshold() -> None:
    gc.set_threshold(700, 11, 12)
    gc_tuning.tune()
    assert gc.get_threshold() == (gc_tuning.FIRST_THRESHOLD, 11, 12)


def test_tune_never_lowers_a_higher_setting() -> None:
    gc.set_threshold(gc_tuning.FIRST_THRESHOLD * 2, 10, 10)
    gc_tuning.tune()
    assert gc.get_threshold() == (gc_tuning.FIRST_THRESHOLD * 2, 10, 10)


def test_every_command_runs_tuned() -> None:
    gc.set_threshold(700, 10, 10)
    result = CliRunner().invoke(main, ["validate", "--help"])
    assert result.exit_code == 0
    assert gc.get_threshold()[0] == gc_tuning.FIRST_THRESHOLD
