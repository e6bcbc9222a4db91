"""The loader's limits (issue 8, defect 7): tiny or endless inputs cannot exhaust time or memory.

Each over-limit input is one located problem that names the limit and the size found, and is
refused before the work the limit bounds (so these tests finish at once instead of hanging).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import SuiteError, load_suite, parse_suite
from openwop_eval.base import limits
from openwop_eval.files.documents import read_document
from tests.helpers import golden, suite_doc

BILLION_LAUGHS = """\
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def problems_of(path: Path) -> list[tuple[int | None, str, str]]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return [(p.line, p.path, p.message) for p in caught.value.problems]


def parse_problems(doc: Any) -> list[tuple[str, str]]:
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    return [(p.path, p.message) for p in caught.value.problems]


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(BILLION_LAUGHS)
    assert len(BILLION_LAUGHS) < 450
    [(line, where, message)] = problems_of(path)
    assert (line, where) == (6, "$.f[0]")  # the first alias that takes the total past the limit
    assert "100,000" in message
    assert "aliases" in message


def test_a_suite_using_a_few_anchors_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "suiteId: acme.x.evals.y\nversion: 1.0.0\nmodes: [golden]\ntasks:\n"
        "  - taskId: a\n    input: &input {message: hello, tags: [a, b]}\n"
        "    expected: &expected {kind: golden, match: {strategy: exact, value: ok}}\n"
        "  - {taskId: b, input: *input, expected: *expected}\n"
        "  - {taskId: c, input: *input, expected: *expected}\n"
    )
    tasks = load_suite(path).suite.tasks
    assert [t.input for t in tasks] == [{"message": "hello", "tags": ["a", "b"]}] * 3


def test_aliases_that_expand_too_deep_are_refused(tmp_path: Path) -> None:
    """Each anchor is shallow, but chained they nest past the depth limit."""
    lines = ["a0: &a0 [[[[[[[[[[x]]]]]]]]]]"]
    lines += [f"a{i}: &a{i} [[[[[[[[[[*a{i - 1}]]]]]]]]]]" for i in range(1, 8)]
    path = tmp_path / "suite.yaml"
    path.write_text("\n".join(lines) + "\n")
    [(line, _, message)] = problems_of(path)
    assert line == 7
    assert "more than 64 levels deep" in message


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_nesting_at_the_limit_loads_and_one_level_more_does_not(
    tmp_path: Path, suffix: str
) -> None:
    def suite(depth: int) -> str:
        # the task input sits 3 levels deep ($, tasks, the task): depth counts those too
        value = "[" * (depth - 3) + "]" * (depth - 3)
        doc = json.dumps(suite_doc({**golden("t"), "input": "VALUE"}))
        return doc.replace('"VALUE"', value)

    path = tmp_path / f"suite{suffix}"
    path.write_text(suite(limits.MAX_DEPTH))
    assert load_suite(path).suite.tasks[0].task_id == "t"
    path.write_text(suite(limits.MAX_DEPTH + 1))
    [(_, _, message)] = problems_of(path)
    assert "more than 64 levels deep" in message


def test_a_hundred_thousand_tasks_are_one_problem() -> None:
    doc = suite_doc(*([{}] * 100_000))
    assert parse_problems(doc) == [
        ("$.tasks", "100,000 tasks is over the limit of 10,000 tasks per suite")
    ]


def test_a_hundred_thousand_tasks_in_a_file_are_one_located_problem(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("suiteId: acme.x.evals.y\ntasks:\n" + "  - {}\n" * 100_000)
    assert problems_of(path) == [
        (3, "$.tasks", "100,000 tasks is over the limit of 10,000 tasks per suite")
    ]


def test_too_many_trajectory_steps() -> None:
    steps = [{"tool": "a:b"}] * (limits.MAX_STEPS + 1)
    doc = suite_doc(golden("t", trajectory={"steps": steps}))
    assert parse_problems(doc) == [
        (
            "$.tasks[0].expected.trajectory.steps",
            "1,001 steps is over the limit of 1,000 steps per trajectory",
        )
    ]


def test_a_billion_trials_per_task_is_a_problem() -> None:
    doc = suite_doc(golden("t"), trials={"count": 1_000_000_000})
    assert parse_problems(doc) == [
        ("$.trials.count", "1,000,000,000 trials per task is over the limit of 1,000")
    ]


def test_tasks_times_trials_is_bounded() -> None:
    doc = suite_doc(*[golden(f"t{i}") for i in range(1001)], trials={"count": 1000})
    assert parse_problems(doc) == [
        (
            "$.trials.count",
            "1,001 tasks × 1,000 trials is 1,001,000 trials; a run may have at most 1,000,000",
        )
    ]


def test_every_limit_at_its_value_is_accepted() -> None:
    doc = suite_doc(
        golden("t", trajectory={"steps": [{"tool": "a:b"}] * limits.MAX_STEPS}),
        trials={"count": limits.MAX_TRIALS_COUNT},
    )
    assert parse_suite(doc).suite.trials_or_default.count == limits.MAX_TRIALS_COUNT


def test_too_many_values_in_a_document_not_from_a_file() -> None:
    """A Python document may share one list many times: the walk counts every visit."""
    row = list(range(1000))
    doc = suite_doc(golden("t", value=[row] * 1000))
    [(where, message)] = parse_problems(doc)
    assert where == "$"
    assert "more values than the limit of 1,000,000 per document" in message


def test_an_oversized_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_bytes(b" " * (limits.MAX_FILE_BYTES + 1))
    assert problems_of(path) == [
        (None, "$", "the file is 16,777,217 bytes; the limit is 16,777,216 bytes (16 MiB)")
    ]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_ends() -> None:
    _, _, problems = read_document(Path("/dev/zero"))
    assert [p.message for p in problems] == [
        "the file is over the limit of 16,777,216 bytes (16 MiB); reading stopped there"
    ]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    path = tmp_path / "suite.yaml"
    os.mkfifo(path)
    return path


def test_a_fifo_nobody_writes_to_is_refused(fifo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "READ_IDLE_TIMEOUT_S", 0.05)
    problems = read_document(fifo)[2]
    assert [p.message for p in problems] == ["no data arrived for 0.05 s; reading stopped"]


@pytest.mark.skipif(not Path("/proc").exists(), reason="O_RDWR on a FIFO is Linux behaviour")
def test_a_fifo_whose_writer_never_writes_is_refused(
    fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "READ_IDLE_TIMEOUT_S", 0.05)
    writer = os.open(fifo, os.O_RDWR)  # holds the FIFO open for writing, never writes
    try:
        problems = read_document(fifo)[2]
    finally:
        os.close(writer)
    assert [p.message for p in problems] == ["no data arrived for 0.05 s; reading stopped"]


def test_a_suite_written_to_a_fifo_loads(fifo: Path) -> None:
    """`openwop-eval validate <(generate-suite)` works: a pipe with a writer is read to EOF."""
    text = json.dumps(suite_doc(golden("t")))

    def write() -> None:
        with open(fifo, "w") as handle:
            handle.write(text)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        loaded = load_suite(fifo)
    finally:
        writer.join()
    assert loaded.suite.tasks[0].task_id == "t"


def test_every_limit_is_documented_with_its_value() -> None:
    text = (Path(__file__).parent.parent.parent / "docs" / "limits.md").read_text("utf-8")
    for name in (n for n in dir(limits) if n.isupper()):
        value = getattr(limits, name)
        shown = f"{value:g} s" if isinstance(value, float) else f"{value:,}"
        assert f"`{name}`" in text, name
        assert shown in text, (name, shown)


@pytest.mark.parametrize(
    ("where", "limit"),
    [
        ("suiteId", limits.MAX_SUITE_ID_CHARS),
        ("version", limits.MAX_SUITE_VERSION_CHARS),
        ("taskId", limits.MAX_TASK_ID_CHARS),
    ],
)
def test_ids_longer_than_the_store_keeps_are_problems(where: str, limit: int) -> None:
    task = {"taskId": "t", "input": {}, "expected": {"kind": "golden", "match": {"value": 1}}}
    doc: dict[str, Any] = {"suiteId": "a.evals.b", "version": "1.0.0", "modes": ["golden"]}
    doc["tasks"] = [task]
    long = {"suiteId": "a" * limit + ".evals.b", "version": "1." + "0" * limit + ".0"}
    owner = task if where == "taskId" else doc
    owner[where] = long.get(where, "t" * (limit + 1))
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    (problem,) = caught.value.problems
    assert problem.path.endswith(where)
    assert f"over the limit of {limit}" in problem.message
