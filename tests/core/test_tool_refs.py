"""Trajectory tools against what provides them: a step nothing provides is a located warning
with the closest name; a forbidden entry only when it is one edit from a tool that is."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.core import tool_refs
from openwop_eval.core.tool_refs import ToolSources, check_tool_refs, one_edit
from tests.helpers import golden, suite_doc

FIXTURES_ONLY = ToolSources()
CATALOG = ToolSources(
    frozenset({"flights:search", "flights:book", "accounts:delete"}), ("the tool catalog",)
)


def task(
    steps: list[str], forbidden: list[str] | None = None, fixtures: list[str] | None = None
) -> dict[str, Any]:
    trajectory: dict[str, Any] = {"steps": [{"tool": s} for s in steps]}
    if forbidden is not None:
        trajectory["forbidden"] = forbidden
    made = golden("t", trajectory=trajectory)
    if fixtures is not None:
        made["fixtures"] = {"toolResponses": [{"tool": f, "response": {}} for f in fixtures]}
    return made


def found(made: dict[str, Any], sources: ToolSources = FIXTURES_ONLY) -> list[tuple[str, str]]:
    problems = check_tool_refs(suite_doc(made), sources)
    assert all(p.severity == "warning" for p in problems)
    return [(p.path, p.message) for p in problems]


def test_a_typo_in_a_step_is_located_and_the_closest_fixture_suggested() -> None:
    made = task(["flights:serach", "flights:book"], fixtures=["flights:search", "flights:book"])
    assert found(made) == [
        (
            "$.tasks[0].expected.trajectory.steps[0].tool",
            "'flights:serach' is not a tool provided by the task's fixtures: a call to it is a"
            " miss, which fails the trial; did you mean 'flights:search'?",
        )
    ]


def test_a_step_the_catalog_alone_provides_is_not_flagged() -> None:
    made = task(["flights:search"], fixtures=["flights:book"])
    assert found(made, CATALOG) == []
    assert len(found(made)) == 1  # the fixtures alone do not provide it


def test_the_suggestion_is_the_closest_of_fixtures_and_sources() -> None:
    made = task(["flights:serch"], fixtures=["hotels:search"])
    [(_, message)] = found(made, CATALOG)
    assert "the task's fixtures or the tool catalog" in message
    assert message.endswith("did you mean 'flights:search'?")


def test_a_name_close_to_nothing_gets_no_suggestion() -> None:
    [(_, message)] = found(task(["weather:now"], fixtures=["flights:search"]))
    assert message.endswith("which fails the trial")


def test_a_glob_step_must_match_a_provided_tool() -> None:
    assert found(task(["flights:*"]), CATALOG) == []
    [(path, message)] = found(task(["hotels:*"], fixtures=["flights:book"]), CATALOG)
    assert path == "$.tasks[0].expected.trajectory.steps[0].tool"
    assert message.startswith("'hotels:*' matches no tool provided by the task's fixtures or")
    assert "did you mean" not in message


def test_a_task_with_no_fixtures_is_not_checked_when_no_tools_are_given() -> None:
    assert found(task(["anything:at-all"])) == []
    assert len(found(task(["anything:at-all"]), CATALOG)) == 1


def test_a_forbidden_tool_nothing_provides_is_normal() -> None:
    made = task(["flights:search"], forbidden=["payments:refund", "flights:cancel"])
    assert found(made, CATALOG) == []


def test_a_forbidden_typo_of_a_provided_tool_is_flagged_only_given_tools() -> None:
    made = task(["flights:search"], forbidden=["acounts:delete"], fixtures=["flights:search"])
    assert found(made) == []  # the fixtures alone: forbidden tools are usually not provided
    assert found(made, CATALOG) == [
        (
            "$.tasks[0].expected.trajectory.forbidden[0]",
            "forbidden 'acounts:delete' is not a tool provided by the task's fixtures or the"
            " tool catalog, but 'accounts:delete' is, so 'accounts:delete' stays allowed; did"
            " you mean 'accounts:delete'?",
        )
    ]


def test_a_forbidden_name_more_than_one_edit_away_is_a_different_tool() -> None:
    # close to 'flights:book' by difflib's measure, but a tool of its own
    made = task(["flights:search"], forbidden=["flights:bill", "flights:booking"])
    assert found(made, CATALOG) == []


def test_a_forbidden_glob_is_never_flagged() -> None:
    made = task(["flights:search"], forbidden=["acounts:*", "flights:serach*"])
    assert found(made, CATALOG) == []


def test_a_forbidden_entry_equal_to_a_provided_tool_is_not_flagged() -> None:
    assert found(task(["flights:search"], forbidden=["accounts:delete"]), CATALOG) == []


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("flights:serach", "flights:search", True),  # neighbours swapped
        ("acounts:delete", "accounts:delete", True),  # a letter dropped
        ("payments:refunds", "payments:refund", True),  # a letter added
        ("db:reed", "db:read", True),  # a letter changed
        ("db:read", "db:read", False),
        ("email:send", "email:read", False),
        ("flights:serahc", "flights:search", False),
        ("ab", "ba", True),
        ("", "a", True),
    ],
)
def test_one_edit(a: str, b: str, near: bool) -> None:
    assert one_edit(a, b) is near
    assert one_edit(b, a) is near


def test_any_shape_is_tolerated() -> None:
    for doc in (None, [], {"tasks": 3}, {"tasks": [1, {"expected": {"trajectory": []}}]}):
        assert check_tool_refs(doc, CATALOG) == []
    odd = {"tasks": [{"expected": {"trajectory": {"steps": [1, {"tool": 2}], "forbidden": 4}}}]}
    assert check_tool_refs(odd, CATALOG) == []


def test_the_search_for_close_names_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # the budget covers one sweep of the catalog's 3 names and the task's 1 fixture
    monkeypatch.setattr(tool_refs, "MAX_NAME_COMPARISONS", 4)
    made = task(["flights:serach", "flights:bok", "hotels:*"], fixtures=["flights:cancel"])
    messages = [message for _, message in found(made, CATALOG)]
    assert len(messages) == 2  # past the budget, a glob step is taken as provided
    assert messages[0].endswith("did you mean 'flights:search'?")
    assert messages[1].endswith("which fails the trial")  # still a warning, no suggestion
