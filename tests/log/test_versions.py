"""The version of an event on read: a newer ``schemaVersion`` than this version reads is
refused, naming the event and both versions; an absent one is read as the current one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.files.summaries import SummaryFileError, read_summary_file
from openwop_eval.log import LogVersionError, replay, verify_log
from openwop_eval.log.event_names import SCHEMA_VERSION
from openwop_eval.log.versions import NEWEST_READ, READ_TYPES, check_version
from openwop_eval.runner.fixtures import recording_from
from tests.helpers import golden, suite_doc
from tests.log.test_replay import foreign_trial

SUITE = parse_suite(suite_doc(golden("t"), trials={"count": 2, "passRule": "mean"})).suite


def own_log() -> list[dict[str, Any]]:
    """A two-trial log as this project writes it: every event with its schemaVersion."""
    docs = foreign_trial(2, "i1", "t", "crm:lookup", 1.0) + foreign_trial(7, "i2", "t", "x", 1.0)
    head = [
        {"sequence": 0, "type": "run.started", "payload": {}},
        {"sequence": 1, "type": "eval.started", "payload": {"suiteId": "s", "modes": ["golden"]}},
    ]
    tail = [
        {"sequence": 12, "type": "eval.completed", "payload": {}},
        {"sequence": 13, "type": "run.completed", "payload": {"outputs": {}}},
    ]
    return [{**d, "runId": "acme/r1", "schemaVersion": SCHEMA_VERSION} for d in head + docs + tail]


def test_this_version_reads_the_version_it_writes() -> None:
    assert NEWEST_READ == SCHEMA_VERSION == 1
    docs = own_log()
    assert len(replay(docs).records) == 2
    assert verify_log(SUITE, docs).summary["passed"] is True


def test_a_newer_event_is_refused_naming_the_event_and_both_versions() -> None:
    docs = own_log()
    docs[6]["schemaVersion"] = 2  # the first trial's eval.scored
    message = (
        "event 7 of run 'acme/r1' (sequence 6, eval.scored): schemaVersion 2 is newer than 1,"
        " the newest this version of openwop-eval reads; upgrade openwop-eval to read this log"
    )
    for read in (replay, lambda d: verify_log(SUITE, d), recording_from):
        with pytest.raises(LogVersionError) as refused:
            read(docs)
        assert str(refused.value) == message


@given(
    version=st.one_of(st.integers(NEWEST_READ + 1, 2**63 - 1), st.integers(2**63, 2**4000)),
    at=st.integers(1, 13),
)
def test_any_newer_version_of_a_read_event_is_refused_and_named(version: int, at: int) -> None:
    docs = own_log()
    docs[at]["schemaVersion"] = version
    with pytest.raises(LogVersionError) as refused:
        verify_log(SUITE, docs)
    message = str(refused.value)
    assert message.startswith(f"event {at + 1} of run 'acme/r1' (sequence {at}, ")
    shown = str(version) if version < 10**18 else f"<an integer of {version.bit_length()} bits>"
    assert f"schemaVersion {shown} is newer than {NEWEST_READ}, the newest" in message
    assert len(message) < 300


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("2", "'2'"),
        (1.0, "1.0"),
        (True, "true"),
        (None, "null"),
        (0, "0"),
        (-3, "-3"),
        ([2], "an array"),
        ({"v": 2}, "an object"),
        ("x" * 10_000, "'" + "x" * 40 + "…'"),
        (-(10**40), f"-<an integer of {(10**40).bit_length()} bits>"),
    ],
)
def test_a_schema_version_that_is_no_version_is_a_located_refusal(value: Any, shown: str) -> None:
    docs = own_log()
    docs[4]["schemaVersion"] = value  # a trial's tool-returned
    with pytest.raises(LogVersionError) as refused:
        replay(docs)
    assert str(refused.value) == (
        f"event 5 of run 'acme/r1' (sequence 4, agent.toolReturned): schemaVersion {shown} is"
        " not an integer ≥ 1, so there is no telling which schema its payload follows; the log"
        " is not read"
    )


def test_an_absent_version_is_read_as_the_current_one() -> None:
    docs = [{k: v for k, v in d.items() if k != "schemaVersion"} for d in own_log()]
    assert verify_log(SUITE, docs).summary == verify_log(SUITE, own_log()).summary


@pytest.mark.parametrize("kind", ["run.started", "agent.decided", "provider.usage", "acme.x"])
def test_the_version_of_a_payload_this_version_does_not_read_is_another_hosts_affair(
    kind: str,
) -> None:
    docs = own_log()
    docs.insert(5, {"sequence": 4, "type": kind, "payload": {}, "schemaVersion": 7})
    assert kind not in READ_TYPES
    assert verify_log(SUITE, docs).summary == verify_log(SUITE, own_log()).summary


def test_hostile_envelopes_around_the_version_are_no_crash() -> None:
    for doc in ({"type": ["eval.scored"], "schemaVersion": 9}, {"schemaVersion": 9}, {}):
        check_version(doc, 1)  # no type this version reads: nothing to check
    where = re.escape("event 3 (sequence an array, eval.scored)")
    with pytest.raises(LogVersionError, match=where):
        check_version({"type": "eval.scored", "sequence": [1], "schemaVersion": 2}, 3)


def test_a_summary_file_whose_run_completed_is_newer_is_refused(tmp_path: Path) -> None:
    docs = own_log()
    docs[-1]["schemaVersion"] = 3
    docs[-1]["payload"] = {"outputs": {"evalSummary": {"suiteId": "s"}}}
    path = tmp_path / "events.jsonl"
    path.write_text("".join(f"{json.dumps(d)}\n" for d in docs))
    with pytest.raises(SummaryFileError) as refused:
        read_summary_file(path)
    assert str(refused.value).startswith(f"{path}: event 14 of run 'acme/r1' (sequence 13, run")
    assert "schemaVersion 3 is newer than 1" in str(refused.value)
