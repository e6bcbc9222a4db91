"""The compiled fast paths agree with the reference paths they stand in for.

Argument predicates with ``mismatch``; compiled steps and whole trajectories with the frozen
matcher in ``oracle_trajectory``; the canonical-JSON shortcut with rfc8785; the remembered
bar with ``decimal``; quick ``__init__``s with the generated ones; and a plan survives
pickling with its compiled tests rebuilt.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest
import rfc8785
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from openwop_eval.core import ToolCall, grade_suite
from openwop_eval.core.canonical import canonical_json
from openwop_eval.core.grading import TaskGrade
from openwop_eval.core.matchers import ArgMismatch, compile_args
from openwop_eval.core.predicates import predicate
from openwop_eval.core.reasons import NO_REASONS, Reason, Reasons
from openwop_eval.core.stats import decimal
from openwop_eval.core.suite import Trajectory
from openwop_eval.core.trajectory import TrajectoryResult, check_trajectory, compile_trajectory
from tests.core import oracle_trajectory
from tests.core.grading_cases import graded_cases, plans


class Text(str):
    """A str subclass: JSON equality wants the type too, so it matches no string literal."""


class Whole(int):
    """An int subclass: still a JSON number."""


KEYS = st.sampled_from(["id", "amount", "to", "tags", "$x"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e300, 10.5]),
    st.sampled_from(["a", "b", "1", "A-1", "x@example.com", "é", 'q"uote', "\ud800"]),
)
values: st.SearchStrategy[Any] = st.recursive(
    SCALARS | SCALARS.filter(lambda v: type(v) is str).map(Text) | st.integers(-3, 3).map(Whole),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
OPERATORS = st.one_of(
    st.fixed_dictionaries({"$gte": st.integers(-2, 2), "$lt": st.floats(-2, 3)}),
    st.fixed_dictionaries({"$gt": st.integers(-2, 2)}),
    st.fixed_dictionaries({"$lte": st.floats(-2, 2), "$gt": st.floats(-3, 1), "$gte": st.just(0)}),
    st.fixed_dictionaries({"$in": st.lists(SCALARS, max_size=3)}),
    st.fixed_dictionaries({"$in": st.lists(st.sampled_from(["a", "b", "1"]), max_size=3)}),
    st.fixed_dictionaries({"$regex": st.sampled_from(["^a", "@example\\.com$", "1", ".*"])}),
    st.fixed_dictionaries({"$any": st.just(True)}),
    st.fixed_dictionaries({"$literal": values}),
    st.fixed_dictionaries({"$schema": st.sampled_from([{"type": "integer"}, {"minLength": 2}])}),
)
SPEC_KEYS = st.sampled_from(["id", "amount", "to", "tags"])
LEAVES = SCALARS | OPERATORS
specs: st.SearchStrategy[Any] = LEAVES | st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SPEC_KEYS, inner, max_size=3),
    max_leaves=6,
)


def twins(value: Any) -> list[Any]:
    """Values JSON tells apart from ``value`` though Python may not: the near misses."""
    out: list[Any] = [value]
    if isinstance(value, bool):
        out += [int(value), float(value), not value]
    elif isinstance(value, int | float):
        out += [float(value), Whole(int(value)), value + 1, value - 0.5]
        out += [True] if value == 1 else [False] if value == 0 else []
    elif isinstance(value, str):
        out += [Text(value), value + "!", value.upper()]
    return out


def fitting(spec: Any) -> list[Any]:
    """Values that match ``spec`` (or would, for a range whose bounds allow them)."""
    if isinstance(spec, dict) and any(isinstance(k, str) and k.startswith("$") for k in spec):
        if spec.get("$in"):
            return list(spec["$in"])
        if "$literal" in spec:
            return [spec["$literal"]]
        bounds = [v for k, v in spec.items() if k in ("$gte", "$gt", "$lte", "$lt")]
        if bounds:
            return [b + d for b in bounds for d in (0, 0.5, -0.5)]
        return ["a", "x@example.com", 1, None]
    if isinstance(spec, dict):
        return [{k: fitting(v)[0] for k, v in spec.items()}]
    if isinstance(spec, list):
        return [[fitting(v)[0] for v in spec]]
    return [spec]


@st.composite
def near(draw: st.DrawFn, spec: Any) -> Any:
    """A value that fits ``spec`` but for at most one spot: a dropped or extra key, or a
    value JSON tells apart from the fitting one though Python may not (``twins``)."""
    if isinstance(spec, dict) and not any(isinstance(k, str) and k.startswith("$") for k in spec):
        keys = list(spec)
        victim = draw(st.integers(-1, len(keys))) if keys else -1
        out = {}
        for i, key in enumerate(keys):
            if i != victim:
                out[key] = draw(st.sampled_from(fitting(spec[key])))
            elif draw(st.integers(0, 3)):  # else the key is dropped
                out[key] = draw(near(spec[key]))
        if victim == len(keys):
            out[draw(KEYS)] = draw(values)
        return out
    if isinstance(spec, list) and spec and draw(st.booleans()):
        items = [draw(st.sampled_from(fitting(v))) for v in spec]
        at = draw(st.integers(0, len(spec) - 1))
        items[at] = draw(near(spec[at]))
        return items if draw(st.integers(0, 4)) else items[:-1]
    return draw(st.sampled_from([x for v in fitting(spec) for x in twins(v)] + [True, "1"]))


@settings(max_examples=400, deadline=None)
@given(spec=st.dictionaries(SPEC_KEYS, specs, max_size=4), exact=st.booleans(), data=st.data())
def test_a_compiled_predicate_is_the_reference_verdict(
    spec: dict[str, Any], exact: bool, data: st.DataObject
) -> None:
    matcher, problems = compile_args(spec, exact, ())
    if problems:
        return
    test = predicate(matcher)
    tried = [data.draw(near(spec)) for _ in range(12)]
    tried += [data.draw(values), data.draw(st.dictionaries(KEYS, values, max_size=4))]
    for value in tried:
        for _ in range(2):  # the second time through a remembered verdict, if any
            assert test(value) is (matcher.mismatch(value, ()) is None), value


LEAF_SPECS = [
    "a",
    1,
    0,
    2.5,
    True,
    False,
    None,
    {"$gte": 1, "$lt": 3},
    {"$gt": 0, "$lte": 1},
    {"$gte": 0},
    {"$in": ["a", "b"]},
    {"$in": [1, "1", True, None]},
    {"$regex": "^a"},
    {"$any": True},
    {"$literal": {"k": 1}},
    {"$literal": [1, "a"]},
    {"$schema": {"type": "integer"}},
]


@pytest.mark.parametrize("leaf", LEAF_SPECS, ids=repr)
@pytest.mark.parametrize("exact", [False, True])
def test_every_near_miss_of_every_leaf_gets_the_reference_verdict(leaf: Any, exact: bool) -> None:
    # The leaf alone, as a field beside another, nested, and in an array; against every
    # value that fits it and every twin of those (1 and True, "a" and Text("a"), ...).
    shapes = [{"v": leaf}, {"v": leaf, "w": "a"}, {"o": {"v": leaf}}, {"v": [leaf, "a"]}]
    for shape in shapes:
        matcher, problems = compile_args(shape, exact, ())
        assert problems == []
        test = predicate(matcher)
        fits = fitting(shape)[0]
        tried: list[Any] = [fits, {}, [], None, {**fits, "extra": 1}]
        for twin in (x for v in fitting(leaf) for x in [*twins(v), True, "1", None]):
            tried += [{**fits, "v": twin}, {**fits, "o": {"v": twin}}, {**fits, "v": [twin, "a"]}]
        tried += [{k: v for k, v in fits.items() if k != key} for key in fits]
        for value in tried:
            assert test(value) is (matcher.mismatch(value, ()) is None), (shape, value)


TOOLS = st.sampled_from(["crm:lookup", "crm:note", "pay:refund", "pay:void", "kb:search"])
PATTERNS = TOOLS | st.sampled_from(["crm:*", "pay:[rv]*", "?b:search", "*"])


@st.composite
def trajectory_docs(draw: st.DrawFn) -> dict[str, Any]:
    steps = draw(
        st.lists(
            st.fixed_dictionaries(
                {"tool": PATTERNS}, optional={"args": st.dictionaries(KEYS, specs, max_size=2)}
            ),
            max_size=4,
        )
    )
    doc: dict[str, Any] = {
        "steps": steps,
        "order": draw(st.sampled_from(["exact", "in-order", "any-order"])),
        "argsMatch": draw(st.sampled_from(["subset", "exact"])),
        "forbidden": draw(st.lists(PATTERNS, max_size=2)),
        "before": draw(st.lists(st.tuples(PATTERNS, PATTERNS), max_size=2)),
    }
    if draw(st.booleans()):
        doc["maxCalls"] = draw(st.integers(0, 5))
    return doc


call_lists = st.lists(
    st.builds(ToolCall, TOOLS, st.dictionaries(KEYS, values, max_size=3) | values, st.booleans()),
    max_size=6,
)


@settings(max_examples=600, deadline=None)
@given(doc=trajectory_docs(), made=call_lists)
def test_a_trajectory_is_checked_as_it_always_was(
    doc: dict[str, Any], made: list[ToolCall]
) -> None:
    compiled, problems = compile_trajectory(Trajectory.model_validate(doc))
    if any(p.severity == "error" for p in problems):
        return
    calls = tuple(made)
    for step in compiled.steps:
        for call in calls:
            assert step.test(call) is oracle_trajectory._step_matches(step, call)
    want = oracle_trajectory.check_trajectory(compiled, calls)
    got = check_trajectory(compiled, calls)
    assert got == want
    assert [str(r) for r in got.violations] == [str(r) for r in want.violations]


@given(text=st.text() | st.text(alphabet='ab"\\\t\x00\x1f\x7fé', max_size=8))
def test_canonical_text_of_a_string_is_rfc8785s(text: str) -> None:
    try:
        want = rfc8785.dumps(text).decode("utf-8")
    except ValueError as refused:
        with pytest.raises(ValueError, match=str(refused)):
            canonical_json(text)
        return
    assert canonical_json(text) == want


@given(number=st.integers() | st.sampled_from([2**53 - 1, 2**53, -(2**53 - 1), -(2**53)]))
def test_canonical_text_of_an_integer_is_rfc8785s(number: int) -> None:
    try:
        want = rfc8785.dumps(number).decode("utf-8")
    except ValueError as refused:
        with pytest.raises(ValueError, match=str(refused)):
            canonical_json(number)
        return
    assert canonical_json(number) == want


@settings(max_examples=100, deadline=None)
@given(compiled=plans(), score=st.floats(allow_nan=False, allow_infinity=False))
def test_the_remembered_bar_is_the_exact_bar(compiled: Any, score: float) -> None:
    for _ in range(2):
        assert compiled.meets_bar(score) is (decimal(score) >= compiled.pass_score)


@pytest.mark.parametrize("cls", [TaskGrade, Reason, ArgMismatch, TrajectoryResult])
def test_a_quick_init_takes_what_the_generated_one_took(cls: type) -> None:
    fields = dataclasses.fields(cls)
    spec = [(f.name, f.type, dataclasses.field(default=f.default)) for f in fields]
    generated = dataclasses.make_dataclass(cls.__name__, spec, frozen=True, slots=True)
    assert str(inspect.signature(cls)) == str(inspect.signature(generated))
    args = [object() for f in fields if f.default is dataclasses.MISSING]
    built = cls(*args)
    assert [getattr(built, f.name) for f in fields][: len(args)] == args
    assert [getattr(built, f.name) for f in fields][len(args) :] == [
        f.default for f in fields if f.default is not dataclasses.MISSING
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, fields[0].name, None)


@settings(max_examples=50, deadline=None)
@given(case=graded_cases())
def test_a_pickled_plan_grades_the_same(case: Any) -> None:
    compiled, recs = case
    assume("$schema" not in repr(compiled.suite))  # a compiled JSON Schema never pickled
    again = pickle.loads(pickle.dumps(compiled))
    assert again == compiled
    assert grade_suite(again, recs).tasks == grade_suite(compiled, recs).tasks


@settings(max_examples=50, deadline=None)
@given(case=graded_cases())
def test_reasons_read_late_are_the_reasons_and_pickle_as_read(case: Any) -> None:
    compiled, recs = case
    for task in grade_suite(compiled, recs).tasks:
        for trial in task.trials:
            assert isinstance(trial.reasons, Reasons)
            assert (trial.reasons is NO_REASONS) is trial.passed
            assert bool(trial.reasons) is not trial.passed  # only a failure has reasons
            first = tuple(trial.reasons)
            assert tuple(trial.reasons) == first  # worked out once, then kept
            assert pickle.loads(pickle.dumps(trial)).reasons == first
            if trial.trajectory is not None:
                assert bool(trial.trajectory.violations) is not trial.trajectory.matched


def test_reasons_compare_as_their_tuple() -> None:
    r = Reason("not-run", "trial 1 did not run; it counts as failed")
    late = Reasons((), lambda n: [r] * n, 2)
    assert late == (r, r)
    assert late == Reasons((r, r))
    assert late != (r,)
    assert hash(late) == hash((r, r))
    assert late[1] is r
    assert late[:1] == (r,)
    assert repr(Reasons((r,))) == f"Reasons({(r,)!r})"
