"""The run diff as a pure function of two logs: what it compares (content-free projections,
run-scoped members left out), where two runs diverge, what changed in their verdicts, and its
bounds — an in-flight run, a long diff, a suite it cannot grade, hostile values."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.core import Suite, canonical_json
from openwop_eval.core.plan import Baseline, RunTerms
from openwop_eval.files.suites import parse_suite
from openwop_eval.log import EXT, verify_log
from openwop_eval.log.rundiff import MAX_NAME_CHARS, DiffSide, project, run_diff
from openwop_eval.log.terms import started_payload

CANARY = "canary-41c7e2"
SUITE: Suite = parse_suite(
    {
        "suiteId": "test.acme.evals.diff",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": 2, "passRule": "mean"},
        "tasks": [
            {
                "taskId": task_id,
                "input": {"text": CANARY},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "ok"},
                    "trajectory": {
                        "steps": [{"tool": "crm:lookup"}],
                        "forbidden": ["accounts:delete"],
                    },
                },
            }
            for task_id in ("lookup", "delete")
        ],
    }
).suite


@dataclass
class Log:
    """An eval run's log as the runner writes it; every run-scoped member is the run's own."""

    run_id: str
    docs: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, payload: dict[str, Any]) -> int:
        seq = len(self.docs)
        self.docs.append(
            {
                "eventId": f"{self.run_id}-ev-{seq}",
                "runId": self.run_id,
                "type": kind,
                "payload": payload,
                "timestamp": f"2030-01-01T00:00:{seq:02d}.{len(self.run_id)}Z",
                "sequence": seq,
                "schemaVersion": 1,
            }
        )
        return seq

    def trial(self, task: str, trial: int, tools: list[str], passed: bool = True) -> None:
        invocation = f"{self.run_id}-inv-{task}-{trial}"
        ext = {EXT: {"taskId": task, "trial": trial, "invocationId": invocation}}
        agent = {"agentId": f"agent-of-{self.run_id}", **ext}
        self.add("agent.invocation-started", {"invocationId": invocation, **agent})
        for i, tool in enumerate(tools):
            call = {"toolName": tool, "callId": f"{invocation}.c{i}", **agent}
            self.add("agent.tool-called", {**call, "inputs": {"q": CANARY}})
            self.add("agent.tool-returned", {**call, "status": "ok", "outcome": {"n": CANARY}})
        self.add("agent.decided", {"decision": "completed", **agent})
        self.add("agent.invocation-completed", {"outcome": "completed", **agent})
        latency = 3 + len(self.run_id)  # wall clock: differs between any two runs
        scored = {"taskId": task, "score": 1.0, "passed": passed, "latencyMs": latency}
        self.add("eval.scored", {**scored, **ext})

    def start(self) -> Log:
        self.add("run.started", {"workflowId": "eval:test.acme.evals.diff", "inputs": {}})
        started = {"suiteId": SUITE.suite_id, "suiteVersion": "1.0.0", "taskCount": 2}
        self.add("eval.started", {**started, "modes": ["golden"]})
        return self

    def end(self, passed: bool = True) -> Log:
        done = {"aggregateScore": 1.0, "passed": passed, "taskCount": 2, "passedCount": 2}
        self.add("eval.completed", done)
        self.add("run.completed", {"outputs": {"evalSummary": {"answer": CANARY}}})
        return self

    def side(self, suite: Suite | None = SUITE, status: str = "completed") -> DiffSide:
        return DiffSide(self.run_id, status, suite, self.docs, f"agent-of-{self.run_id}")


def run(run_id: str, forbidden_in: tuple[str, int] | None = None, end: bool = True) -> Log:
    """Two tasks, two trials each, looked up; ``forbidden_in`` also deletes an account."""
    log = Log(run_id).start()
    for trial in range(2):
        for task in ("lookup", "delete"):
            bad = (task, trial) == forbidden_in
            tools = ["crm:lookup", "accounts:delete"] if bad else ["crm:lookup"]
            log.trial(task, trial, tools, passed=not bad)
    return log.end() if end else log


def test_a_log_against_itself_is_identical() -> None:
    log = run("acme/run-a")
    diff = run_diff(log.side(), log.side())
    assert diff["a"] == diff["b"] == "acme/run-a"
    assert diff["divergedAtSeq"] is None
    assert diff["eventDiffs"] == []
    assert diff["truncated"] is False
    state = diff["stateDiff"]
    assert state["status"] == {"a": "completed", "b": "completed"}
    assert state["tasks"] == []
    assert state["unchangedTasks"] == 2
    assert state["eval"]["gatedAggregateScore"] == {"a": 1.0, "b": 1.0, "delta": 0.0}


def test_run_scoped_members_and_wall_clock_times_are_not_compared() -> None:
    """Ids, timestamps, invocation and call ids, the agent and latencies all differ here."""
    diff = run_diff(run("acme/run-a").side(), run("acme/another-run-b").side())
    assert diff["divergedAtSeq"] is None
    assert diff["eventDiffs"] == []
    assert diff["stateDiff"]["tasks"] == []
    assert diff["stateDiff"]["agentId"] == {
        "a": "agent-of-acme/run-a",
        "b": "agent-of-acme/another-run-b",
    }


def test_a_forbidden_call_is_where_the_runs_diverge_and_what_changed() -> None:
    good, bad = run("acme/good"), run("acme/bad", forbidden_in=("delete", 1))
    diff = run_diff(good.side(), bad.side())
    forbidden = next(
        d["sequence"]
        for d in bad.docs
        if d["type"] == "agent.tool-called" and d["payload"]["toolName"] == "accounts:delete"
    )
    assert diff["divergedAtSeq"] == forbidden
    first = diff["eventDiffs"][0]
    assert first["op"] == "changed"
    assert first["bEvent"] == {
        "type": "agent.tool-called",
        "sequence": forbidden,
        "taskId": "delete",
        "trial": 1,
        "toolName": "accounts:delete",
        "argsHash": hashlib.sha256(canonical_json({"q": CANARY}).encode()).hexdigest(),
    }
    assert {d["op"] for d in diff["eventDiffs"][1:]} >= {"changed", "added"}  # b is 2 longer

    (task,) = diff["stateDiff"]["tasks"]
    assert task["taskId"] == "delete"
    assert task["score"] == {"a": 1.0, "b": 1.0, "delta": 0.0}  # the honest output score
    assert task["gatedScore"] == {"a": 1.0, "b": 0.5, "delta": -0.5}  # the gate
    assert task["passed"] == {"a": True, "b": False}
    assert task["unchangedTrials"] == 1
    (trial,) = task["trials"]
    assert trial["trial"] == 1
    assert trial["a"] == {
        "outcome": "passed",
        "score": 1.0,
        "gatingScore": 1.0,
        "passed": True,
        "trajectoryMatched": True,
    }
    assert trial["b"]["outcome"] == "failed"
    assert trial["b"]["trajectoryMatched"] is False
    assert trial["constraints"] == {
        "violatedInA": [],
        "violatedInB": ["forbidden"],
        "newlyViolated": ["forbidden"],
        "resolved": [],
    }
    assert diff["stateDiff"]["eval"]["passed"] == {"a": True, "b": False}
    assert diff["stateDiff"]["eval"]["passedCount"] == {"a": 2, "b": 1, "delta": -1}

    back = run_diff(bad.side(), good.side())["stateDiff"]["tasks"][0]["trials"][0]
    assert back["constraints"]["resolved"] == ["forbidden"]
    assert back["constraints"]["newlyViolated"] == []


def test_events_only_one_log_holds_are_added_or_removed() -> None:
    short, long = run("acme/short"), run("acme/long")
    long.trial("lookup", 2, ["crm:lookup"])  # a trial past the suite's count: not graded
    diff = run_diff(long.side(), short.side())
    assert diff["truncated"] is False
    removed = [d for d in diff["eventDiffs"] if d["op"] == "removed"]
    assert removed
    assert all("bEvent" not in d and "aEvent" in d for d in removed)
    added = run_diff(short.side(), long.side())["eventDiffs"]
    assert [d["seq"] for d in added if d["op"] == "added"] == [d["seq"] for d in removed]
    assert all("aEvent" not in d for d in added if d["op"] == "added")


def test_an_in_flight_run_is_compared_as_far_as_its_log_goes() -> None:
    done = run("acme/done", forbidden_in=("delete", 1))
    running = run("acme/running", end=False)
    del running.docs[8:]  # one trial in: the forbidden call is not reached
    diff = run_diff(running.side(status="running"), done.side())
    assert diff["truncated"] is True
    assert diff["divergedAtSeq"] is None  # the prefix both hold is the same
    assert diff["eventDiffs"] == []
    state = diff["stateDiff"]
    assert state["status"] == {"a": "running", "b": "completed"}
    # the verdicts are of what each log holds: a's later trials have not run
    lookup = next(t for t in state["tasks"] if t["taskId"] == "lookup")
    (later,) = lookup["trials"]
    assert (later["trial"], later["a"]["outcome"], later["b"]["outcome"]) == (
        1,
        "not-run",
        "passed",
    )
    assert later["constraints"]["violatedInA"] == later["constraints"]["resolved"] == ["not-run"]


def test_the_event_diffs_are_capped_and_the_rest_counted() -> None:
    a, b = run("acme/a"), Log("acme/b").start()
    for trial in range(2):
        b.trial("lookup", trial, ["other:tool"] * 3)
    b.end()
    full = run_diff(a.side(), b.side())
    capped = run_diff(a.side(), b.side(), max_event_diffs=3)
    assert capped["eventDiffs"] == full["eventDiffs"][:3]
    assert capped["divergedAtSeq"] == full["divergedAtSeq"]
    assert capped["stateDiff"]["eventDiffsOmitted"] == len(full["eventDiffs"]) - 3
    assert "eventDiffsOmitted" not in full["stateDiff"]


def test_a_suite_that_cannot_be_read_omits_the_eval_diff_and_says_so() -> None:
    log = run("acme/a")
    diff = run_diff(log.side(), log.side(suite=None))
    state = diff["stateDiff"]
    assert "eval" not in state
    assert "tasks" not in state
    assert state["notes"] == ["b: the run's suite cannot be read; the eval diff is omitted"]
    assert state["suiteRef"] == {"a": "test.acme.evals.diff@1.0.0", "b": None}
    assert diff["divergedAtSeq"] is None  # the event diff needs no suite


def test_a_log_its_suite_cannot_grade_omits_the_eval_diff() -> None:
    log = run("acme/a")
    log.trial("no-such-task", 0, [])
    state = run_diff(log.side(), run("acme/b").side())["stateDiff"]
    assert state["notes"] == ["a: the run's log cannot be graded; the eval diff is omitted"]
    assert "eval" not in state


def test_no_content_leaves_the_diff() -> None:
    """The canary is in the inputs, the tool results, the output, an error, a reason and an
    unknown event; the diff of every pair of these logs carries it nowhere."""
    a, b = run("acme/a"), run("acme/b", forbidden_in=("lookup", 0))
    b.add("agent.invocation-completed", {"outcome": CANARY, EXT: {"error": CANARY}})
    b.add("run.failed", {"error": {"code": CANARY, "message": CANARY}})
    b.add("x.custom-event", {"note": CANARY, "toolName": CANARY})
    b.add("agent.tool-returned", {"status": "error", "error": {"code": CANARY}})
    for left, right in ((a, b), (b, a), (b, b)):
        text = json.dumps(run_diff(left.side(), right.side()))
        assert CANARY not in text
    assert CANARY in json.dumps(b.docs)  # it was there to leak


def test_each_event_type_shows_its_whitelist_only() -> None:
    assert project({"type": "x.custom", "sequence": 4, "payload": {"a": 1}}) == {
        "type": "x.custom",
        "sequence": 4,
    }
    done = project({"type": "run.completed", "sequence": 9, "payload": {"outputs": {"x": 1}}})
    assert done == {"type": "run.completed", "sequence": 9, "outputsPresent": True}
    failed = project({"type": "run.failed", "payload": {"error": {"code": "run_failed"}}})
    assert failed == {"type": "run.failed", "errorCode": "run_failed"}
    v1 = project({"type": "agent.toolCalled", "payload": {"toolName": "t", "inputs": [1]}})
    assert v1["type"] == "agent.tool-called"
    assert v1["argsHash"] == hashlib.sha256(b"[1]").hexdigest()


@pytest.mark.parametrize(
    "doc",
    [
        {"type": 7, "sequence": "0", "payload": []},
        {"type": "eval.scored", "sequence": -1, "payload": {"score": float("nan")}},
        {"type": "eval.scored", "sequence": 2**60, "payload": {"score": 10**400, "passed": 1}},
        {"type": "agent.tool-called", "payload": {"inputs": {"n": float("inf")}}},
        {"type": "agent.tool-called", "payload": {"argsHash": CANARY, EXT: "not an object"}},
        {"type": "eval.started", "payload": {"modes": [CANARY, 1], "taskCount": True}},
    ],
)
def test_hostile_values_are_dropped_never_shown_or_a_crash(doc: dict[str, Any]) -> None:
    shown = project(doc)
    assert set(shown) <= {"type", "sequence"}
    other = Log("acme/other").start().end()
    assert CANARY not in json.dumps(run_diff(DiffSide("a", "failed", None, [doc]), other.side()))


def test_a_name_too_long_to_show_is_shown_as_its_hash() -> None:
    name = "t" * (MAX_NAME_CHARS + 1)
    shown = project({"type": "agent.tool-called", "payload": {"toolName": name}})
    assert shown["toolName"] == "sha256:" + hashlib.sha256(name.encode()).hexdigest()


TERMS_SUITE: Suite = parse_suite(
    {
        "suiteId": "test.acme.evals.terms",
        "version": "1.0.0",
        "modes": ["golden", "adversarial", "regression"],
        "thresholds": {"passScore": 0.5},
        "trials": {"count": 2, "passRule": "mean"},
        "tasks": [
            {
                "taskId": t,
                "input": {},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
            }
            for t in ("a", "b")
        ],
    }
).suite
SEVERITIES = ("low", "medium", "high", "critical")


@st.composite
def terms(draw: st.DrawFn) -> RunTerms:
    modes = draw(st.sets(st.sampled_from(["adversarial", "regression"])))
    bar = draw(st.sampled_from(SEVERITIES)) if "adversarial" in modes else None
    score = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    baseline = Baseline("acme/r-base", score) if "regression" in modes else None
    return RunTerms(("golden", *sorted(modes)), bar, baseline)  # type: ignore[arg-type]


TERMS_TRIALS = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 1)),
    st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.lists(st.sampled_from(SEVERITIES), max_size=2)),
)


def terms_log(run_id: str, run_terms: RunTerms, trials: dict[Any, Any]) -> Log:
    """A run under ``run_terms``: its trials' scores and findings as eval.scored records them."""
    log = Log(run_id)
    log.add("eval.started", started_payload(TERMS_SUITE, run_terms))
    for (task, index), (score, severities) in trials.items():
        findings = [{"kind": "canary-leak", "severity": s} for s in severities]
        ext = {"taskId": task, "trial": index, "invocationId": f"i-{task}-{index}"}
        log.add("agent.invocation-started", {"invocationId": ext["invocationId"], EXT: ext})
        scored = {"taskId": task, "score": score, "passed": score >= 0.5}
        log.add("eval.scored", {**scored, EXT: {**ext, "safetyFindings": findings}})
    return log


@settings(max_examples=120, deadline=None)
@given(terms(), TERMS_TRIALS, terms(), TERMS_TRIALS)
def test_each_side_is_graded_under_the_terms_its_run_recorded(
    terms_a: RunTerms, trials_a: dict[Any, Any], terms_b: RunTerms, trials_b: dict[Any, Any]
) -> None:
    a, b = terms_log("r-a", terms_a, trials_a), terms_log("r-b", terms_b, trials_b)
    figures = run_diff(a.side(TERMS_SUITE), b.side(TERMS_SUITE))["stateDiff"]["eval"]
    for side, log in (("a", a), ("b", b)):
        summary = verify_log(TERMS_SUITE, log.docs).summary
        summary.setdefault("gatedAggregateScore", summary["aggregateScore"])  # shown if differs
        for key in ("aggregateScore", "gatedAggregateScore", "passed", "passedCount"):
            assert figures[key][side] == summary[key], (side, key)
