"""OpenWOP tool names ↔ function names: valid for the API, distinct, and reversible."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.agents.tool_catalog import decode_function_name, function_name

FUNCTION = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.mark.parametrize(
    ("tool", "function"),
    [
        ("crm:lookup-order", "crm__lookup-order"),
        ("payments:refund", "payments__refund"),
        ("crm:lookup_order", "crm__lookup_order"),
        ("search", "search"),
        ("a:b:c", "a__b__c"),
        ("docs.search", "_docs_2esearch"),
        ("a__b", "_a_5f_5fb"),
        ("a_:b", "_a_5f_3ab"),
        ("a:_b", "_a_3a_5fb"),
        (":lead", "__3alead"),
        ("crm/lookup order", "_crm_2flookup_20order"),
        ("café:menu", "_caf_c3_a9_3amenu"),
    ],
)
def test_names_map_as_documented(tool: str, function: str) -> None:
    assert function_name(tool) == function
    assert decode_function_name(function) == tool


def test_a_long_name_is_cut_and_hashed() -> None:
    tool = "warehouse:" + "inventory-adjustment-" * 5
    name = function_name(tool)
    assert len(name) == 64
    assert FUNCTION.match(name)
    assert name.startswith("warehouse__inventory-adjustment-")
    assert name[51:54] == "___"
    assert function_name(tool + "x") != name  # the same 51 characters, another hash
    assert decode_function_name(name) is None  # only the table of offered tools knows it


@pytest.mark.parametrize(
    "function", ["crm___x", "_crm_3A", "_crm_zz", "_", "crm__", "x_", "_crm_3alookup", "a b"]
)
def test_names_it_never_makes_do_not_decode(function: str) -> None:
    assert decode_function_name(function) is None


@given(st.text(min_size=1, max_size=80))
def test_every_name_maps_to_a_valid_function_name_that_decodes_back(tool: str) -> None:
    name = function_name(tool)
    assert FUNCTION.match(name), name
    if "___" not in name:
        assert decode_function_name(name) == tool


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_distinct_names_never_share_a_function_name(a: str, b: str) -> None:
    if a != b:
        assert function_name(a) != function_name(b)


@given(st.text(alphabet="ab:_-", min_size=1, max_size=12), st.text(alphabet="ab:_-", max_size=12))
def test_separators_never_collide(a: str, b: str) -> None:
    if a != b and b:
        assert function_name(a) != function_name(b)
