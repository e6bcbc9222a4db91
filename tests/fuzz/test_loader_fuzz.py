"""Property-based fuzzing of the suite loader, JSON and YAML (issue 8).

The contract (see ``contract.py``): ``load_suite`` and ``parse_suite`` return a suite or raise
``SuiteError`` with located problems, never anything else; each example finishes within
hypothesis' deadline; and a suite they accept runs — planned, graded and canonicalised, and
for generated files through the real runner and store. The long version of this is the
hand-run ``fuzz/fuzz_suites.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_eval import SuiteError, parse_suite, schemas
from openwop_eval.files.schema_errors import ModelValidator, model_validator, schema_problems
from openwop_eval.runner.api import run_suite
from openwop_eval.store import Store
from tests.fuzz import generate
from tests.fuzz.contract import ACCEPTED, StepAgent, check_document, check_file, run_for_real

FUZZ = settings(
    max_examples=40,
    deadline=3000,  # milliseconds: generous for a loaded CI machine, tiny next to a hang
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class DrawChooser:
    """The generator's choices, drawn by hypothesis so that a failing case shrinks."""

    def __init__(self, data: st.DataObject) -> None:
        self._data = data

    def integer(self, low: int, high: int) -> int:
        return self._data.draw(st.integers(low, high))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def store(workdir: Path) -> Iterator[Store]:
    store = Store(f"sqlite:///{workdir / 'store.sqlite'}")
    yield store
    store.close()


def write(workdir: Path, suffix: str, data: bytes) -> Path:
    path = workdir / f"case{suffix}"
    path.write_bytes(data)
    return path


@FUZZ
@given(data=st.data())
def test_generated_and_mutated_suite_files_hold_the_contract(
    data: st.DataObject, workdir: Path, store: Store
) -> None:
    suffix, content = generate.case(DrawChooser(data))
    status, loaded = check_file(write(workdir, suffix, content))
    if loaded is not None:
        assert status == ACCEPTED
        assert isinstance(run_for_real(loaded, store)["passed"], bool)


@FUZZ
@given(content=st.binary(max_size=400), suffix=st.sampled_from([".json", ".yaml", ".txt"]))
def test_arbitrary_bytes_are_loaded_or_refused(content: bytes, suffix: str, workdir: Path) -> None:
    check_file(write(workdir, suffix, content))


def json_values() -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.integers(min_value=2**53 - 2, max_value=2**64).map(lambda n: n * (-1) ** n)
        | st.floats()  # nan and ±inf included
        | st.text(st.characters(codec=None), max_size=8)  # lone surrogates included
    )
    keys = st.text(st.characters(codec=None), max_size=6)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=20,
    )


POSITIONS = [
    ("tasks", 0, "input"),
    ("tasks", 0, "expected", "match", "value"),
    ("tasks", 0, "expected", "trajectory", "steps", 0, "args", "id"),
    ("tasks", 0, "fixtures", "toolResponses", 0, "response"),
    ("thresholds", "maxCostUsd"),
    ("thresholds", "passScore"),
    ("trials", "count"),
    ("trials", "k"),
    ("tasks", 0, "expected", "trajectory", "maxCalls"),
]


def _place(doc: dict[str, Any], where: tuple[Any, ...], value: Any) -> dict[str, Any]:
    skeleton: dict[str, Any] = {
        "tasks": [
            {
                "taskId": "t",
                "input": {},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "ok"},
                    "trajectory": {"steps": [{"tool": "a:b", "args": {"id": 1}}]},
                },
                "fixtures": {"toolResponses": [{"tool": "a:b", "response": {}}]},
            }
        ],
        "thresholds": {},
        "trials": {},
    }
    doc = {**doc, **skeleton}
    target: Any = doc
    for part in where[:-1]:
        target = target[part]
    target[where[-1]] = value
    return doc


@FUZZ
@given(value=json_values(), where=st.sampled_from(POSITIONS))
def test_any_json_value_anywhere_in_a_document_not_from_a_file(
    value: Any, where: tuple[Any, ...]
) -> None:
    """The host's path: parse_suite on a decoded document, no file, no parser."""
    base = {"suiteId": "fuzz.x.evals.y", "version": "1.0.0", "modes": ["golden"]}
    status = check_document(_place(base, where, value))
    if status == ACCEPTED:
        assert not (isinstance(value, float) and not math.isfinite(value))


@FUZZ
@given(data=st.data())
def test_python_documents_hold_the_contract(data: st.DataObject) -> None:
    """Non-JSON Python values, shared references, non-string keys and deep nesting."""
    check_document(generate.documents(DrawChooser(data)))


NUMBER_PLACES = [
    "trials: {count: NUMBER}",
    "thresholds: {maxCostUsd: NUMBER}",
    "thresholds: {passScore: NUMBER}",
    "tasks: [{taskId: t, input: {}, expected: {kind: golden, match: {strategy: contains,"
    " value: NUMBER}}}]",
    "tasks: [{taskId: t, input: {}, expected: {kind: golden, match: {strategy: exact,"
    " value: ok}, trajectory: {steps: [{tool: 'a:b', args: {id: NUMBER}}], maxCalls: NUMBER}}}]",
]


@settings(FUZZ, max_examples=30)
@given(number=st.sampled_from(generate.NUMBER_TEXTS), place=st.sampled_from(NUMBER_PLACES))
def test_number_spellings_where_numbers_mean_something(
    number: str, place: str, workdir: Path
) -> None:
    header = "suiteId: fuzz.x.evals.y\nversion: 1.0.0\nmodes: [golden]\n"
    if not place.startswith("tasks"):
        place += "\ntasks: [{taskId: t, input: {}, expected: {kind: golden, match: {strategy:"
        place += " exact, value: ok}}}]"
    check_file(write(workdir, ".yaml", (header + place.replace("NUMBER", number)).encode()))


# --- what the fuzzing found ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("trials", "where"),
    [
        ({"count": 2.0, "k": 3.0}, "$.trials.count"),  # k > count went unseen as floats
        ({"count": 1e300}, "$.trials.count"),  # became a 301-digit int in the model
        ({"count": 1.5e3}, "$.trials.count"),  # slipped past the trials limit
    ],
)
def test_integer_fields_take_integers_written_as_integers(
    trials: dict[str, Any], where: str
) -> None:
    doc: dict[str, Any] = {"suiteId": "fuzz.x.evals.y", "version": "1.0.0", "modes": ["golden"]}
    doc["tasks"] = [{"taskId": "t", "input": {}, "expected": {"kind": "golden", "match": _MATCH}}]
    doc["trials"] = trials
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    problem = caught.value.problems[0]
    assert problem.path == where
    assert problem.message.startswith("expected an integer, got ")


_MATCH = {"strategy": "exact", "value": "ok"}


def test_a_suite_with_null_content_reads_back_from_the_store(store: Store) -> None:
    doc: dict[str, Any] = {"suiteId": "fuzz.x.evals.y", "version": "1.0.0", "modes": ["golden"]}
    doc["tasks"] = [{"taskId": "t", "input": None, "expected": {"kind": "golden", "match": _MATCH}}]
    loaded = parse_suite(doc)
    run = run_suite(loaded, StepAgent(loaded.suite), store=store)
    stored = store.get_run(run.run_id)
    assert stored is not None
    assert parse_suite(stored.suite_doc).suite == loaded.suite  # what a resume does


@pytest.mark.parametrize("field", ["suiteId", "version", "targetAgentId", "taskId"])
def test_an_id_with_a_trailing_newline_is_a_problem(field: str) -> None:
    """YAML's ``|`` block scalars end in a newline; Python's ``$`` let it match, pydantic's not."""
    task = {"taskId": "t", "input": {}, "expected": {"kind": "golden", "match": _MATCH}}
    doc: dict[str, Any] = {"suiteId": "acme.x.evals.y", "version": "1.0.0", "modes": ["golden"]}
    doc["targetAgentId"], doc["tasks"] = "agent", [task]
    where = task if field == "taskId" else doc
    where[field] += "\n"
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    assert [p.path.rsplit(".", 1)[-1] for p in caught.value.problems] == [field]


def test_what_the_models_refuse_is_a_problem_even_if_the_schema_missed_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A safety net: a gap between the schema and the models is a SuiteError, not a crash."""
    monkeypatch.setattr("openwop_eval.files.suites.schema_problems", lambda validator, doc: [])
    doc = {"suiteId": "acme.x.evals.y", "version": "1.0.0", "modes": ["golden"], "tasks": []}
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    assert [p.path for p in caught.value.problems] == ["$.tasks"]


@FUZZ
@given(st.data())
def test_inlined_schema_reports_what_the_schema_with_references_reports(
    data: st.DataObject,
) -> None:
    """The suite validator inlines the schema's ``$ref``s (schema_errors.model_validator):
    on any mutation of a valid suite it reports exactly the problems, in the same order,
    that the schema as shipped reports."""
    chooser = DrawChooser(data)
    doc = generate.pick(chooser, generate.valid_suites())
    for _ in range(chooser.integer(0, 3)):
        doc = generate.mutate(chooser, doc)
    schema = schemas.load(schemas.SUITE_SCHEMA)
    with_refs = schema_problems(ModelValidator(schema), doc)
    assert schema_problems(model_validator(schema), doc) == with_refs
